"""What the lab-1 graders measure: the five masters of the target's entrypoint.sh, and probes on each queue.

A Fleet is one run of the target's entrypoint.sh, with a broker database
of its own and the probe tasks loaded next to the lab's tasks. Probes go
to a queue by name, with no limits in the message, as a producer that
does not import Kontor's tasks sends them; so they measure what the
workers decide. An Outcome says
what happened to one probe, in production seconds: the soft limit the
worker logged for it and when the probe felt it, and the hard limit
that killed it. The numbers come from the worker's own log line and
from TimeLimitExceeded; the probe's notes check that they also held in
time.
"""

from __future__ import annotations

import ast
import json
import io
import os
import shutil
import subprocess
import sys
import threading
import tokenize
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import redis

from budgetlab.errors import BudgetlabError
from budgetlab.harness.grading import CouldNotGrade, MachineBusy
from budgetlab.harness.rig import Rig
from budgetlab.inworker import clock
from budgetlab.stories.lab1 import (DEFAULT_HARD, DEFAULT_SOFT, HARD_VARIABLE, SLUG, SOFT_LINE, SOFT_VARIABLE,
                                    number, start_masters, worker_clock, workers)
from budgetlab.stories.reading import settled, stored_at

# The decorated probe's own limits (lab1_probes.decorated).
DECORATED_SOFT, DECORATED_HARD = 200.0, 250.0
# The override check's budget: far from the defaults (600/900) and from the inherited 120.
OVERRIDE_SOFT, OVERRIDE_HARD = 300.0, 400.0
# What the settings-change check writes into a copy of settings.py in place of the default budget:
# numbers of the same width, far from every other budget the checks use.
CHANGED = {DEFAULT_SOFT: 480.0, DEFAULT_HARD: 720.0}
# The longest hard limit the checks wait for on the transactional queues (the copy's settings may compute
# theirs): 7 s of wall time at the checks' clock for the probe that must outlive it.
LONGEST_HARD = 2400.0
# The checks' lab clock, 2.5 times faster than `budgetlab run`'s.
FACTOR = worker_clock()
PROBES_DIR = Path(__file__).resolve().parent


# Wall seconds a busy two-core machine may keep a pool's timer, or the child it signals, from running.
# At the checks' clock a production allowance alone is a fifth of a second of wall time: CI, with two
# checks and a browser on two cores, once delivered a 200 s soft limit 398 s in.
SCHEDULING_DELAY = 1.0


def lateness_allowed(limit: float) -> float:
    """Production seconds a limit may arrive late on a busy two-core machine."""
    return 60 + 0.25 * limit + SCHEDULING_DELAY / FACTOR


def outlasting(limit: float) -> float:
    """How long a probe sleeps to meet `limit` even when it comes as late as allowed.

    A probe that ends first has shown that the limit is not there: a
    shorter one would read a kill a busy machine delayed (CI once saw
    a 250 s hard limit miss a 500 s probe) as a kill that never comes.
    """
    return limit + lateness_allowed(limit)


@dataclass
class Outcome:
    """What happened to one probe, in production seconds."""

    queue: str
    seconds: float                 # how long the probe meant to run
    queued: float | None           # from sending the probe to its start: the pool armed its timers in between
    soft_limit: float | None       # the soft limit the worker logged for it
    soft_at: float | None          # when the probe caught SoftTimeLimitExceeded
    hard_limit: float | None       # the hard limit that killed it (TimeLimitExceeded)
    killed_at: float | None        # when the worker recorded the kill
    ran: float | None              # how long it ran, if it finished on its own
    error: str | None = None       # any other failure

    @property
    def finished(self) -> bool:
        return self.ran is not None


class Fleet:
    """One run of the target's entrypoint.sh: five masters, one per queue, on a rig of its own."""

    def __init__(self, target_dir: Path, log: Path, overrides: dict[str, str] | None = None):
        self.target_dir, self.log = target_dir, log
        self.overrides = dict(overrides or {})
        # A rig each: both fleets consume the same queue names, so each needs a broker of its own.
        self.rig = Rig(target_dir, label="lab1")
        self.name = f"check-{uuid.uuid4().hex[:6]}"
        self.tree = self.notes = None
        self.error: str | None = None
        self.failure: BaseException | None = None   # anything else its start raised, for the checks to raise
        self.ready = threading.Event()              # set once it started (or failed to) and its probes are sent
        self._masters: dict = {}

    @property
    def client(self):
        return self.rig.client

    def start(self) -> None:
        """Run entrypoint.sh and wait for five "ready." lines; a failure is kept for `require`."""
        path = os.pathsep.join(filter(None, [str(self.target_dir), str(PROBES_DIR), os.environ.get("PYTHONPATH")]))
        # Budget variables the grader's own shell may have set are removed, unless this fleet sets them.
        extra = {SOFT_VARIABLE: None, HARD_VARIABLE: None, "KONTOR_WORKER_NAME": self.name,
                 "BUDGETLAB_CLOCK": repr(FACTOR), "PYTHONPATH": path, **self.overrides}
        self.notes = redis.Redis.from_url(self.rig.broker_url)
        try:
            self.tree = start_masters(self.rig, [f"{SLUG}.tasks", "lab1_probes"], self.log, extra)
        except BudgetlabError as exc:
            self.error = str(exc)

    def require(self) -> None:
        """Wait until the fleet has started and its probes are sent; raise when it could not start."""
        self.ready.wait()
        if self.failure is not None:
            raise self.failure
        if self.error:
            raise CouldNotGrade(self.error)

    def send(self, queue: str, kind: str, seconds: float) -> Probe:
        probe_id, sent = uuid.uuid4().hex, clock.production_now(FACTOR)
        result = self.client.send_task(f"lab1probe.{kind}", args=[probe_id, seconds], queue=queue)
        return Probe(self, queue, seconds, probe_id, result, sent)

    def reported_limits(self, queue: str) -> tuple[float | None, float | None]:
        """Return the soft and hard limit the master of `queue` reports for a probe without its own (None: none)."""
        return self._master_of(queue).limits_of("lab1probe.plain")

    def _master_of(self, queue: str):
        # Only asked about a queue whose probe came back: its master ran it, so silence is not an answer.
        if queue not in self._masters:
            self._masters = workers(self.client, expected=self.tree.ready_hostnames())
        worker = self._masters.get(queue)
        if worker is None:
            # It ran the probe, so it is alive: a master too busy to answer in time, which a slower clock may spare.
            raise MachineBusy(f"the master that ran the probe on '{queue}' did not answer celery inspect "
                                f"(log: {self.log})")
        return worker

    def stop(self) -> None:
        # Nothing in a probe needs a warm shutdown: the checks have read every outcome they need.
        if self.notes is not None:
            self.notes.close()
        self.rig.close()


# How a master reads its settings module (kontor.celery_app): Celery's config_from_object, here
# without Kontor's Django set-up, which no budget depends on. Prints the default budget as JSON.
_READ_SETTINGS = (
    "import json\n"
    "from celery import Celery\n"
    "app = Celery(set_as_current=False)\n"
    f"app.config_from_object('{SLUG}.settings')\n"
    "print(json.dumps([app.conf.task_soft_time_limit, app.conf.task_time_limit]))\n"
)


class SettingsRead:
    """The default budget a tree's settings.py gives with no budget variable set, read as Celery reads it.

    The read starts at once in a process of its own, beside the fleets'
    start; `budget()` waits for it.
    """

    def __init__(self, root: Path):
        env = {name: value for name, value in os.environ.items() if name not in (SOFT_VARIABLE, HARD_VARIABLE)}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
        self._process = subprocess.Popen([sys.executable, "-c", _READ_SETTINGS], cwd=root, env=env, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._found: tuple[float | None, float | None] | None = None
        self.error: str | None = None   # why settings.py could not be read: the learner's code, not the stack

    def budget(self) -> tuple[float | None, float | None]:
        """Return the soft and hard limit settings.py gives (None: none, or it could not be read)."""
        if self._found is None:
            try:
                out, err = self._process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.close()
                raise CouldNotGrade(f"importing {SLUG}.settings did not finish in 60 s") from None
            self._found = (None, None)
            if self._process.returncode:
                last = (err.strip().splitlines() or ["no output"])[-1]
                self.error = f"settings.py could not be read: {last}"
            else:
                soft, hard = json.loads(out.strip().splitlines()[-1])
                self._found = (number(soft), number(hard))
        return self._found

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.communicate()


@dataclass
class ChangedBudget:
    """A copy of the target's lab-1 files whose settings.py says another default budget, and how it was changed."""

    root: Path   # a tree laid out like labs/, holding lab 1's files only
    how: str     # in a person's words


def with_changed_budget(target_dir: Path, folder: Path) -> ChangedBudget:
    """Copy the target's lab-1 files into `folder`, with the default budget in settings.py changed as a reviewer would.

    Every 600 and 900 in settings.py's code, written as a number or as the
    digits of a string (os.environ.get's default), becomes 480 and 720;
    comments stay as they are. When settings.py writes neither number
    (10 * 60, say), the two settings are set to 480 and 720 at its end.
    """
    shutil.copytree(target_dir / SLUG, folder / SLUG, ignore=shutil.ignore_patterns("__pycache__", "*.ipynb"))
    settings = folder / SLUG / "settings.py"
    text = settings.read_text()
    lines = text.splitlines(keepends=True)
    edits = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.NUMBER, tokenize.STRING) or token.start[0] != token.end[0]:
            continue
        try:
            value = float(ast.literal_eval(token.string))
        except (ValueError, TypeError, SyntaxError, MemoryError):
            continue
        old = f"{value:g}"
        if value in CHANGED and old in token.string:
            edits.append((token.start, token.end, token.string.replace(old, f"{CHANGED[value]:g}", 1)))
    for (row, start), (_, end), new in reversed(edits):
        lines[row - 1] = lines[row - 1][:start] + new + lines[row - 1][end:]
    numbers = " and ".join(f"{old:g}" for old in CHANGED)
    changed = " and ".join(f"{new:g}" for new in CHANGED.values())
    if edits:
        how = f"with the numbers {numbers} in settings.py changed to {changed}"
    else:
        soft, hard = CHANGED.values()
        lines.append(f"\ntask_soft_time_limit = {soft:g}\ntask_time_limit = {hard:g}\n")
        how = f"with task_soft_time_limit and task_time_limit set to {changed} at the end of settings.py"
    settings.write_text("".join(lines))
    return ChangedBudget(folder, how)


def start_one_after_another(fleets: list[Fleet], then):
    """Start the fleets in order in a thread of their own, calling `then(fleet)` as soon as each is ready.

    Starting is CPU-bound, so one fleet at a time gets the first one ready
    sooner: its probes run while the next fleet starts, and a check waits
    (`Fleet.require`) only for the fleet it reads, so no single check's
    time covers every start. Returns a function that lets no further fleet start and waits for the
    one starting, to call before stopping them.
    """
    cancelled = threading.Event()

    def run() -> None:
        error = failure = None
        for fleet in fleets:
            try:
                if error or failure or cancelled.is_set():
                    # The same entrypoint would fail the same way; say so at once instead of waiting again.
                    fleet.error, fleet.failure = error or "the checks ended before this fleet started", failure
                    continue
                fleet.start()
                error = fleet.error
                if not error:
                    then(fleet)
            except BaseException as exc:  # noqa: BLE001 - raised again by the checks that wait for this fleet
                fleet.failure = failure = exc
            finally:
                fleet.ready.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def finish() -> None:
        cancelled.set()
        thread.join()
    return finish


def stop_all(fleets: list[Fleet]) -> None:
    """Stop fleets side by side."""
    threads = [threading.Thread(target=fleet.stop) for fleet in fleets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@dataclass
class Probe:
    """One probe sent to a queue; `outcome()` waits for it."""

    fleet: Fleet
    queue: str
    seconds: float
    probe_id: str
    result: object
    sent: float                    # production timestamp taken just before the probe was sent

    def outcome(self, timeout: float = 60.0) -> Outcome:
        from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

        self.fleet.require()
        if not settled(self.result, timeout):
            return Outcome(self.queue, self.seconds, None, None, None, None, None, None,
                           error=f"no result after {timeout:.0f} s wall")
        started = self._note("start")
        soft_at = self._since(started, self._note("soft"))
        value = self.result.result
        # Every line of a probe catches SoftTimeLimitExceeded, so a probe that failed with it felt it
        # outside its own code: after it returned, as a probe exactly as long as its soft limit may
        # (1800 s on agent-batch), or, with no start noted, before it began.
        outside = isinstance(value, SoftTimeLimitExceeded)
        soft_limit = self._logged_soft_limit(wait=soft_at is not None or outside)
        ran = hard_limit = killed_at = error = None
        if self.result.state == "SUCCESS" and isinstance(value, dict):
            ran = float(value["ran"])
        elif outside:
            ran = self.seconds if started is not None else None
        elif isinstance(value, TimeLimitExceeded):
            hard_limit = float(value.args[0]) if value.args else None
            killed_at = self._since(started, stored_at(self.result))
        else:
            error = f"{self.result.state}: {value!r}"
        return Outcome(self.queue, self.seconds, self._since(self.sent, started), soft_limit, soft_at, hard_limit,
                       killed_at, ran, error)

    def _note(self, kind: str) -> float | None:
        """The production timestamp the probe noted, if it got that far."""
        raw = self.fleet.notes.get(f"lab1probe:{self.probe_id}:{kind}")
        return float(raw) if raw is not None else None

    @staticmethod
    def _since(start: float | None, end: float | None) -> float | None:
        """Seconds between two production timestamps, if both are known."""
        return end - start if start is not None and end is not None else None

    def _logged_soft_limit(self, wait: bool) -> float | None:
        deadline = time.monotonic() + (3.0 if wait else 0.0)
        while True:
            for match in SOFT_LINE.finditer(self.fleet.tree.text()):
                if match["id"] == self.result.id:
                    return float(match["limit"])
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)
