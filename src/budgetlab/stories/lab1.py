"""Lab 1's story, shared by `budgetlab run 1` and its checks: five masters from entrypoint.sh, and the budgets in force.

Kontor's worker container starts one Celery master per queue from the
learner's entrypoint.sh. The budgets a task really gets are read from
the running system, never worked out from the files: what each master
says about itself (`inspect`), its command line, the `timelimit` header
of a message. A value is taken from the header, else from the task on
the worker, else from the pool, which is the order a worker reads them
in for each message; the layer named is where that value was found.
"""

from __future__ import annotations

import datetime
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab import labs
from budgetlab.errors import BudgetlabError
from budgetlab.inworker import clock

SLUG = labs.slug_of(1)
TRANSACTIONAL = ("imports", "documents", "sweeps")
BATCH, INTERACTIVE = "agent-batch", "agent-interactive"
QUEUES = (*TRANSACTIONAL, BATCH, INTERACTIVE)
# The budgets the lab asks for: the house default on the transactional queues, set where a
# reviewer sees it; batch agent work a generous soft limit; a person waits on the interactive queue.
DEFAULT_SOFT, DEFAULT_HARD = 600.0, 900.0
BATCH_AT_LEAST, INTERACTIVE_AT_MOST = 1800.0, 60.0
# The variables the lab names as the contract for overriding the default budget.
SOFT_VARIABLE, HARD_VARIABLE = "KONTOR_TASK_SOFT_TIME_LIMIT", "KONTOR_TASK_TIME_LIMIT"


def worker_clock() -> float:
    """The clock of the masters the checks start (budgetlab.harness.zygote starts on it): 2.5 times faster than
    `budgetlab run 1`'s, so that the longest probe (1800 s on agent-batch) takes 3.6 s of wall time by default."""
    return clock.factor() * 0.4


SOFT_LINE = re.compile(r"Soft time limit \((?P<limit>[\d.]+)s\) exceeded for \S+\[(?P<id>[\w-]+)\]")
_LOG_LINE = re.compile(r"^\[(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): \w+/[\w-]+\] (?P<text>.*)$", re.MULTILINE)


def start_masters(rig, modules: list[str], log: Path, extra_env: dict | None = None):
    """Run the target's entrypoint.sh on the rig and wait for one "ready." master per queue; return the tree.

    Raises BudgetlabError naming the queues whose master never became ready.
    """
    from budgetlab.harness import zygote
    from budgetlab.harness.rig import WorkerDidNotStart

    entrypoint = rig.target_dir / SLUG / "entrypoint.sh"
    if not entrypoint.exists():
        raise BudgetlabError(f"{entrypoint} is missing; restore it with 'budgetlab reset 1'")
    # Under `budgetlab check`, an interpreter that forks the masters from the check's zygote.
    extra = {"PYTHON": zygote.python(), "KONTOR_WORKER_NAME": f"{rig.label}-{uuid.uuid4().hex[:6]}", **(extra_env or {})}
    try:
        return rig.start_worker(list(QUEUES), modules, argv=["bash", str(entrypoint)], expect_ready=len(QUEUES),
                                cwd=entrypoint.parent, log=log, extra_env=extra, timeout=90)
    except WorkerDidNotStart as exc:
        ready = sorted(host.split("@")[0] for host in exc.tree.ready_hostnames())
        missing = [queue for queue in QUEUES if queue not in ready]
        if ready and missing:
            reason = f"no master for {', '.join(missing)} became ready (log: {log})"
        else:
            reason = str(exc).removeprefix("the worker did not start: ")
        raise BudgetlabError(f"entrypoint.sh did not start one Celery master per queue ({len(ready)} of "
                             f"{len(QUEUES)} ready: {', '.join(ready) or 'none'}); {reason}") from None


@dataclass
class Worker:
    """What one running master says about itself."""

    host: str
    pid: int | None = None
    pool: tuple[float, float] = (0.0, 0.0)          # inspect stats: the pool's default soft and hard limit
    flags: dict[str, float] = field(default_factory=dict)   # --soft-time-limit / --time-limit on its command line
    settings: dict = field(default_factory=dict)    # inspect conf
    tasks: dict[str, dict[str, float]] = field(default_factory=dict)  # inspect registered, with limits

    def limits_of(self, task: str) -> tuple[float | None, float | None]:
        """The soft and hard limit this master applies to a task sent without limits: each bound, else the pool's."""
        bound = self.tasks.get(task, {})
        soft, hard = ((bound[key] if key in bound else pool) or None
                      for key, pool in (("soft_time_limit", self.pool[0]), ("time_limit", self.pool[1])))
        return soft, hard


def workers(app, patience: float = 30.0, expected: Iterable[str] = (), wait: float = 3.0) -> dict[str, Worker]:
    """Ask every running master about itself; return them by the queue each consumes.

    Each of the four questions waits `wait` seconds for the replies, or
    until as many came as masters are `expected` (five when none are). A
    master that a busy machine kept from answering one of them in time is
    asked again, for up to `patience` seconds, so that a late reply never
    reads as a master with no limits; a master that never answers them all
    is left out.
    The masters `expected` (hostnames known to run, from their "ready."
    lines) are asked again the same way, even one that has answered nothing
    yet. While no master has answered at all, every question is asked again.
    """
    expected = set(expected)
    inspect = app.control.inspect(timeout=wait, limit=len(expected) or len(QUEUES))
    questions = {"queues": inspect.active_queues, "stats": inspect.stats, "conf": inspect.conf,
                 "registered": lambda: inspect.registered("soft_time_limit", "time_limit")}
    answers: dict[str, dict] = {name: {} for name in questions}
    deadline = time.monotonic() + patience
    unanswered = list(questions)
    while True:
        for name in unanswered:
            answers[name].update(questions[name]() or {})
        # A master a busy machine kept from answering each question of a round in time is not among the
        # hosts that answered: only `expected` names it (CI, 2026-12-06: a lab 1 check found no master for one of
        # its five queues, twice in a row).
        hosts = set().union(*answers.values(), expected)
        # No reply at all is not "no masters": the caller asks once its masters run, and a busy machine may
        # keep every one of them from answering a whole round (rehearsal: a master resumed 4 s into a round).
        unanswered = [name for name, replies in answers.items() if not hosts or not hosts <= set(replies)]
        if not unanswered or time.monotonic() >= deadline:
            break
    complete = {host for host in hosts if all(host in replies for replies in answers.values())}
    found = {}
    for host in sorted(complete):
        worker = Worker(host)
        info = answers["stats"][host]
        worker.pid = info.get("pid")
        timeouts = info.get("pool", {}).get("timeouts") or (0, 0)
        worker.pool = (float(timeouts[0] or 0), float(timeouts[1] or 0))
        worker.flags = command_line_limits(worker.pid)
        worker.settings = answers["conf"][host]
        worker.tasks = dict(map(_registered_entry, answers["registered"][host]))
        for queue in answers["queues"][host]:
            found[queue["name"]] = worker
    return found


def command_line_limits(pid: int | None) -> dict[str, float]:
    """Return the time-limit flags on a running master's command line."""
    from budgetlab.harness import zygote

    argv = zygote.argv_of(pid)
    found = {}
    for index, word in enumerate(argv):
        for flag in ("--soft-time-limit", "--time-limit"):
            if word == flag and index + 1 < len(argv):
                found[flag] = float(argv[index + 1])
            elif word.startswith(flag + "="):
                found[flag] = float(word.split("=", 1)[1])
    return found


def _registered_entry(entry: str) -> tuple[str, dict[str, float]]:
    """Split "name [soft_time_limit=600 time_limit=900]" into the name and its limits."""
    name, _, rest = entry.partition(" [")
    limits = {}
    for pair in rest.rstrip("]").split():
        key, _, value = pair.partition("=")
        try:
            limits[key] = float(value)
        except ValueError:
            pass
    return name, limits


def from_log(text: str, task_id: str) -> tuple[float | None, float | None]:
    """Return the soft limit a job met and how long it ran, both in production seconds, from a worker log.

    The run time is from the master's "received" line to the soft-limit
    line, or to the line that ends the task; with one idle child per
    master, the task starts as it is received.
    """
    soft = received = ended = None
    for line in _LOG_LINE.finditer(text):
        said = line["text"]
        if task_id not in said:
            continue
        at = datetime.datetime.strptime(line["at"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        limit = re.match(r"Soft time limit \(([\d.]+)s\) exceeded", said)
        if limit:
            soft, ended = float(limit[1]), at
        elif said.endswith(" received"):
            received = at
        elif re.search(r"\] (succeeded in|raised unexpected|failed)", said) or said.startswith("Hard time limit"):
            ended = at if ended is None else ended
    # The worker logs on the lab clock: its timestamps are production time already.
    ran = ended - received if received is not None and ended is not None else None
    return soft, ran


@dataclass
class Budget:
    """One limit of one task on one queue, and the layer it was found in."""

    seconds: float | None
    layer: str


def queue_of(app, name: str) -> str:
    route = app.amqp.router.route({}, name, (), {})
    queue = route.get("queue")
    return getattr(queue, "name", queue) or app.conf.task_default_queue


def lab_tasks(app, tasks) -> list:
    """Return the lab's tasks in queue order, then by name."""
    def order(task) -> tuple[int, str]:
        queue = queue_of(app, task.name)
        return (QUEUES.index(queue) if queue in QUEUES else len(QUEUES), task.name)

    return sorted((task for task in app.tasks.values() if task.__module__ == tasks.__name__), key=order)


def budget(index: int, name: str, header: list, task_limits: dict[str, float], worker: Worker,
           producer_settings) -> Budget:
    """Find one limit (0: hard, 1: soft, the header's order) where the worker finds it, and name its layer."""
    import celery

    key = ("time_limit", "soft_time_limit")[index]
    setting = ("task_time_limit", "task_soft_time_limit")[index]
    flag = ("--time-limit", "--soft-time-limit")[index]
    binds_settings = celery.VERSION[:2] >= (5, 7)
    if header[index]:
        value = float(header[index])
        from_settings = binds_settings and value == number(producer_settings.get(setting))
        return Budget(value, "sent settings" if from_settings else _task_layer(name, key, value, worker.settings))
    if task_limits.get(key):
        value = task_limits[key]
        from_settings = binds_settings and value == number(worker.settings.get(setting))
        return Budget(value, "bound settings" if from_settings else _task_layer(name, key, value, worker.settings))
    value = worker.pool[1 - index]
    if not value:
        return Budget(None, "none")
    if worker.flags.get(flag) == value:
        return Budget(value, "worker flag")
    if number(worker.settings.get(setting)) == value:
        return Budget(value, "settings")
    return Budget(value, "worker")


def _task_layer(name: str, key: str, value: float, settings: dict) -> str:
    """Name a limit set on the task itself: by `task_annotations` when they give this value, else by its decorator."""
    annotations = settings.get("task_annotations")
    # Celery accepts one mapping or a sequence of them; a mapping's keys are task names or "*".
    for mapping in annotations if isinstance(annotations, (list, tuple)) else [annotations]:
        if isinstance(mapping, dict):
            for pattern in (name, "*"):
                entry = mapping.get(pattern)
                if isinstance(entry, dict) and number(entry.get(key)) == value:
                    return "annotation"
    return "decorator"


def number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
TRANSCRIPTS = {
    # What `run 1` shows depends on the machine where the lab clock turns wall milliseconds into
    # production seconds: start-up and job durations, how far a job got at its limit.
    "run": {"masks": (
        (r"ready in [\d.]+ s wall", "ready in T s wall"),
        # The bar, and the spaces where a bar with nothing done yet would be.
        (r" +[━╸╺]* *\d+/(?=\d+ (?:invoices|files))", "  BAR N/"),
        (r"\b\d+ s (stopped|finished)", r"T s \1"),
        (r"after \d+ of", "after N of"),
        (r"(files|invoices) in \d+ s", r"\1 in T s"),
    )},
}
