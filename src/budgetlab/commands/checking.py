"""`budgetlab check`: run one lab's hidden graders in a subprocess and report what a person would see.

The graders run under pytest with the grading plugin, in a process that
skips the interpreter's teardown once pytest is done (harness/pytestrun). This module only
checks that grading is possible (grader files intact, stack up, learner
files parse), streams one line per check as results arrive, and turns
the outcome into an exit code: 0 all passed, 1 some failed, 2 could not grade.

Its log, .budgetlab/logs/check-N.log, holds pytest's output with one line
per failure and what the lab's processes printed, never the graders'
source: the folder is the one `run` sends learners to for worker logs.
A maintainer debugging a grader sets BUDGETLAB_GRADER_TRACEBACKS=1 for
pytest's full tracebacks there.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab import integrity, stack
from budgetlab.errors import BudgetlabError
from budgetlab.harness import checkreport, database, logcap
from budgetlab.harness.importprobe import PROBE_AFTER, ImportProbe
from budgetlab.harness.logcap import CappedLog
from budgetlab.harness.workers import tree_of
from budgetlab.harness.zygote import Zygote
from budgetlab.inworker import clock
from budgetlab.labs import Lab
from budgetlab.paths import display_path, labs_root, logs_dir
from budgetlab.stack.process import descendants, pid_alive, start_ticks
from budgetlab.targets import Target


# What progress and the room board call the check that lab code failed when it kept the checks from running.
CODE_RAN = "The lab's code imports and runs under the checks"


@dataclass
class Outcome:
    """What one `check` found."""

    results: list[dict] = field(default_factory=list)
    could_not_grade: str | None = None
    #: could_not_grade names what the learner's code did (it died, hung or ended its process): a verdict, exit 1.
    code_fault: bool = False
    #: could_not_grade says the machine kept a check from timing the code (grading.MachineBusy).
    busy: bool = False
    #: Time spent inside the checks, fixtures included: workers, scenarios, databases.
    seconds_in_checks: float = 0.0
    #: Where the last lines of each worker's log were kept after a failed check, as displayed.
    worker_logs: list[str] = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r["outcome"] == "passed")

    @property
    def graded(self) -> bool:
        """Whether it says something of the code (an attempt): it graded, or the code itself kept it from grading."""
        return not self.could_not_grade or self.code_fault

    def kept_results(self) -> list[dict]:
        """The checks as the learner's progress and the room board keep them.

        Code that kept the checks from running (it hung, raised or exited)
        failed: it counts as one more failed check, whose symptom is the
        sentence the check printed, so a facilitator sees a failing lab and
        not the machine's fault.
        """
        if self.could_not_grade and self.code_fault:
            return [*self.results, {"title": CODE_RAN, "outcome": "failed", "symptom": self.could_not_grade}]
        return self.results

    @property
    def exit_code(self) -> int:
        if self.could_not_grade:
            return 1 if self.code_fault else 2
        if not self.results:
            return 2
        return 0 if self.passed == len(self.results) else 1


def preflight(lab: Lab, target: Target) -> None:
    """Refuse to grade when the result would mean nothing; each reason is one line.

    The template's age is not read here: `grade` reads it while pytest starts.
    """
    changed = integrity.modified(labs_root(), under=f"{lab.slug}/", top_level=True)
    if changed:
        raise BudgetlabError(f"grader files modified ({', '.join(sorted(set(changed))[:3])}); "
                             "restore tests/ from git to be graded like everyone else")
    stack.require()
    root = target.lab_folder(lab)
    for name in lab.files:
        if not (root / name).exists():
            raise target.missing(root / name, lab)
        check_syntax(root / name)


def check_syntax(path: Path) -> None:
    """Fail with file:line when a learner file does not parse."""
    if path.suffix == ".py":
        try:
            compile(path.read_text(), str(path), "exec")
        except SyntaxError as exc:
            raise BudgetlabError(f"{path}:{exc.lineno}: syntax error ({exc.msg}); fix it and check again") from None
    elif path.suffix == ".sh":
        result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        if result.returncode != 0:
            first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else "bash -n failed"
            raise BudgetlabError(f"syntax error: {first}; fix it and check again")


# Set (to anything) by a maintainer: the check log gets pytest's full tracebacks, graders' source included.
TRACEBACKS = "BUDGETLAB_GRADER_TRACEBACKS"

# The backstop for a whole check; a single stuck check is stopped far sooner by the
# grading plugin's stall alarm (grading.stall_seconds), which knows the lab's limits.
DEADLINE_SECONDS = 180


@dataclass
class _Watch:
    """What `grade` learns from the graders' report file besides results."""

    current: str = ""
    #: The "worker" entries: each started worker tree's log, root PID and that PID's start time.
    workers: list[dict] = field(default_factory=list)

    def stop_left_workers(self) -> None:
        """Kill worker trees that a killed grading process could not stop itself, by PID."""
        for worker in self.workers:
            pid = worker.get("pid")
            if pid and pid_alive(pid) and start_ticks(pid) == worker.get("started"):
                for member in tree_of(pid):
                    try:
                        os.kill(member, signal.SIGKILL)
                    except ProcessLookupError:
                        pass


def grade(lab: Lab, target: Target, on_result=lambda entry: None, fail_fast: bool = False) -> Outcome:
    """Run lab N's graders against a target, calling on_result for each check as it finishes.

    When the stack or lab code breaks grading itself (a server stopped, code
    that hangs, exits or kills its process), the outcome carries one sentence
    saying so instead of failed checks, and nothing is graded.
    """
    preflight(lab, target)
    logs = logs_dir()
    logs.mkdir(exist_ok=True)
    report = Path(tempfile.mkstemp(prefix="check-", suffix=".jsonl", dir=logs)[1])
    argv = [sys.executable, "-m", "budgetlab.harness.pytestrun", str(lab.tests_dir()),
            "-p", "budgetlab.harness.grading", "-p", "no:cacheprovider", f"--target={target.root}", "-q", "--no-header",
            f"--rootdir={labs_root()}"]
    # One word per option, so pytest never mistakes a target folder for a test path.
    config = labs_root() / "pyproject.toml"
    if config.exists():
        argv.append(f"--config-file={config}")
    if fail_fast:
        argv.append("-x")
    # The log keeps each failure's symptom (one line, with the grader's file and line) and what the
    # lab's code logged, never the graders' source: no traceback, and plain asserts, whose message is
    # the symptom alone (every grader's assert has one) without pytest's account of the expression.
    # A maintainer who debugs a grader asks for all of it with BUDGETLAB_GRADER_TRACEBACKS=1.
    if not os.environ.get(TRACEBACKS):
        argv += ["--tb=line", "--assert=plain", "--disable-warnings"]
    # Third-party pytest plugins (anyio's, platformdirs') serve no grader and cost a few tenths of a second.
    env = dict(os.environ, BUDGETLAB_GRADING="1", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               **{checkreport.VARIABLE: str(report)})
    outcome, watch = Outcome(), _Watch()
    probe = ImportProbe(lab, target.root)
    log = CappedLog(logs / f"check-{lab.number}.log")
    waiting = Zygote()
    env.update(waiting.variables)
    try:
        proc = subprocess.Popen(argv, cwd=labs_root(), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    except BaseException:
        waiting.stop()
        raise
    log.drain(proc.stdout)
    try:
        # Both while pytest starts, which imports and collects for most of a second before a grader starts a
        # worker or copies the template: the zygote imports what the lab's workers import, and the template's
        # age is read (psycopg's import is most of a tenth of a second), so that a stale one ends the check here.
        waiting.start(lab.story, target.root, labs_root())
        database.require_current()
        outcome.could_not_grade = _follow(proc, report, probe, outcome, watch, on_result)
        if outcome.could_not_grade is None and proc.returncode not in (0, 1):
            outcome.could_not_grade = stack.fault() or probe.wait_verdict()
            if outcome.could_not_grade is None:
                outcome.could_not_grade, outcome.code_fault = _ended_early(proc.returncode, lab, target, watch,
                                                                           log.path)
        # What the probe saw is the learner's code dying, hanging or exiting at import.
        if outcome.could_not_grade is not None and outcome.could_not_grade == probe.verdict():
            outcome.code_fault = True
        # A failed check's symptom says what went wrong; the workers' own log (a traceback, a warning the
        # code logged) is often why, and the scratch folder that held it is about to go.
        if (outcome.could_not_grade or outcome.passed < len(outcome.results)) and watch.workers:
            kept = [logcap.keep_tail(Path(worker["log"]), logs / f"check-{lab.number}-worker-{n}.log")
                    for n, worker in enumerate(watch.workers, 1)]
            kept = [display_path(path) for path in kept if path]
            if kept and outcome.could_not_grade:
                outcome.could_not_grade += f" (the workers' last log lines: {', '.join(kept)})"
            else:
                outcome.worker_logs = kept
    finally:
        stop_tree(proc)
        watch.stop_left_workers()
        waiting.stop()
        log.join(5)
        log.close()
        probe.close()
        report.unlink(missing_ok=True)
        _remove_orphans()
    return outcome


def grade_aloud(lab: Lab, target: Target, console, fail_fast: bool = False) -> Outcome:
    """Grade as `budgetlab check` shows it: a line per check as it ends, then the summary, on `console`.

    When the machine kept a check from timing the code (MachineBusy), the
    lab is graded once more on a clock SLOWER times slower, as the
    troubleshooting page advises a person to do by hand: its verdicts are in
    production seconds, so they mean the same on either clock, and a busy
    machine's scheduling delays weigh half as much. Only then does a check
    take longer.
    """
    from budgetlab.commands import views

    def aloud() -> Outcome:
        return grade(lab, target, on_result=lambda result: console.print(views.check_line(result)),
                     fail_fast=fail_fast)

    outcome = aloud()
    slower = slower_clock(lab) if outcome.busy else None
    if slower is not None:
        console.print(views.grading_again(outcome.could_not_grade, _times(lab), _times(lab, slower)))
        with clock.running_at(slower):
            outcome = aloud()
    console.print(views.check_summary(outcome))
    return outcome


# How many times slower the lab clock runs when a lab is graded again because the machine was too busy to time it.
SLOWER = 2.0


def slower_clock(lab: Lab) -> float | None:
    """The BUDGETLAB_CLOCK under which the lab's workers run SLOWER times slower than now; None when the lab starts
    no workers (its story has no worker_clock) or already runs in real time.

    A lab's clock follows BUDGETLAB_CLOCK in its own way (lab 6's is never
    faster than 50x, lab 1's masters run 2.5 times faster than it, lab 7's
    has its own default), so the factor is read back through the story.
    """
    worker_clock = _worker_clock(lab)
    if worker_clock is None:
        return None
    now = worker_clock()
    wanted = min(1.0, now * SLOWER)
    # Away from a bound, a lab's clock is a fixed multiple of BUDGETLAB_CLOCK (lab 1's: 0.4 of it): read the
    # multiple at the wanted clock and undo it, then check that the lab's clock did slow down.
    with clock.running_at(wanted):
        value = min(1.0, float(f"{wanted * wanted / worker_clock():.6g}"))
    with clock.running_at(value):
        return value if worker_clock() > now else None


def _worker_clock(lab: Lab):
    import importlib

    return getattr(importlib.import_module(lab.story), "worker_clock", None) if lab.story else None


def _times(lab: Lab, factor: float | None = None) -> float:
    """How many times faster than production the lab's workers run, under BUDGETLAB_CLOCK=factor (None: as now)."""
    worker_clock = _worker_clock(lab) or clock.factor
    if factor is None:
        return 1 / worker_clock()
    with clock.running_at(factor):
        return 1 / worker_clock()


def _follow(proc, report: Path, probe: ImportProbe, outcome: Outcome, watch: _Watch, on_result) -> str | None:
    """Read the report as pytest writes it; return why grading is impossible, or None once pytest ended."""
    started = time.monotonic()
    seen = 0
    progressed = False  # a worker became ready or a check ended: the lab's code imports
    while True:
        if time.monotonic() - started > DEADLINE_SECONDS:
            return (f"the checks did not finish within {DEADLINE_SECONDS} s wall; "
                    "does a task loop forever or never return?")
        verdict = probe.verdict()
        if verdict:
            return verdict
        done = proc.poll() is not None
        text = report.read_text()
        # Only whole lines: the grader may be halfway through writing the last one (CI read one cut at 129 characters).
        lines = text[:text.rfind("\n") + 1].splitlines()
        for line in lines[seen:]:
            entry = json.loads(line)
            kind = entry.get("kind")
            if kind == "timing":
                outcome.seconds_in_checks += entry["seconds"]
            elif kind == "start":
                watch.current = entry["title"]
            elif kind == "worker":
                watch.workers.append(entry)
            elif kind == "ready":
                progressed = True
            else:
                if entry["outcome"] != "passed":
                    # A failure because a server died is no verdict on the learner's code.
                    fault = stack.fault()
                    if fault:
                        return fault
                # Failures already seen are the code's verdict: a later check that cannot grade is listed
                # as such beside them, and never turns the whole check into "could not grade".
                if entry.get("could_not_grade") and outcome.passed == len(outcome.results):
                    verdict = probe.wait_verdict()
                    outcome.busy = verdict is None and entry.get("busy", False)
                    return verdict or entry["symptom"]
                outcome.results.append(entry)
                progressed = True
                on_result(entry)
        seen = len(lines)
        if done:
            return None
        # Read after the report, so a worker that became ready meanwhile spares the probe.
        if not progressed and time.monotonic() - started > PROBE_AFTER:
            probe.start()
        time.sleep(0.05)


def _ended_early(code: int, lab: Lab, target: Target, watch: _Watch, log: Path) -> tuple[str, bool]:
    """Say how the grading process ended when pytest itself did not end it, and whether lab code did it."""
    files = ", ".join(display_path(target.lab_dir(lab.slug) / name) for name in lab.files)
    during = f" during «{watch.current}»" if watch.current else ""
    if code < 0:
        how = f"was killed by {signal.Signals(-code).name}"
    elif code in (2, 3, 4, 5):
        return f"the graders did not run (pytest exit {code}); see {display_path(log)}", False
    else:
        how = f"exited with status {code}"
    return (f"the grading process {how}{during}; that check runs code from {files} in its own process: "
            "does that code end or kill its process?", True)


def _remove_orphans() -> None:
    """Drop scratch databases whose process died (this check's own, if it was killed); never fail the check."""
    try:
        database.remove_orphans()
    except Exception:  # the stack may be the very thing that broke; stack up sweeps again
        pass


def stop_tree(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """Interrupt pytest so its fixtures stop the workers, then kill whatever is left, by PID."""
    if proc.poll() is not None:
        return
    tree = descendants(proc.pid) | {proc.pid}
    try:
        os.kill(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    tree |= descendants(proc.pid)
    for pid in tree:
        if pid_alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    proc.wait()
