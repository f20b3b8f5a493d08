"""`budgetlab check`: run one lab's hidden graders in a subprocess and report what a person would see.

The graders run under pytest with the grading plugin. This module only
checks that grading is possible (grader files intact, stack up, learner
files parse), streams one line per check as results arrive, and turns
the outcome into an exit code: 0 all passed, 1 some failed, 2 could not grade.
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
from budgetlab.labs import Lab
from budgetlab.paths import labs_root, state_dir
from budgetlab.stack.process import descendants, pid_alive


@dataclass
class Outcome:
    """What one `check` found."""

    results: list[dict] = field(default_factory=list)
    could_not_grade: str | None = None
    #: Time spent inside the checks, fixtures included: workers, scenarios, databases.
    seconds_in_checks: float = 0.0

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r["outcome"] == "passed")

    @property
    def exit_code(self) -> int:
        if self.could_not_grade or not self.results:
            return 2
        return 0 if self.passed == len(self.results) else 1


def target_dir(target: str) -> Path:
    if target in ("labs", "solutions"):
        return labs_root() / target
    path = Path(target).resolve()
    if not path.is_dir():
        raise BudgetlabError(f"target {target!r} is neither 'labs', 'solutions' nor a folder")
    return path


def preflight(lab: Lab, target: str) -> None:
    """Refuse to grade when the result would mean nothing; each reason is one line."""
    changed = integrity.modified(labs_root(), under=f"{lab.slug}/") + [
        name for name in integrity.modified(labs_root()) if "/" not in name]
    if changed:
        raise BudgetlabError(f"grader files modified ({', '.join(sorted(set(changed))[:3])}); "
                             "restore tests/ from git to be graded like everyone else")
    stack.require()
    root = target_dir(target) / lab.slug
    for name in lab.files:
        check_syntax(root / name)


def check_syntax(path: Path) -> None:
    """Fail with file:line when a learner file does not parse."""
    if not path.exists():
        raise BudgetlabError(f"{path} is missing; restore it with 'budgetlab reset' or from git")
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


# A check that runs longer than this has a task that loops forever or never reports.
DEADLINE_SECONDS = 180


def run(lab: Lab, target: str, on_result=lambda entry: None, fail_fast: bool = False) -> Outcome:
    """Run lab N's graders against a target, calling on_result for each check as it finishes."""
    preflight(lab, target)
    logs = state_dir() / "logs"
    logs.mkdir(exist_ok=True)
    report = Path(tempfile.mkstemp(prefix="check-", suffix=".jsonl", dir=logs)[1])
    argv = [sys.executable, "-m", "pytest", str(lab.tests_dir()), "-p", "budgetlab.grading",
            "-p", "no:cacheprovider", f"--target={target_dir(target)}", "-q", "--no-header",
            f"--rootdir={labs_root()}"]
    # One word per option, so pytest never mistakes a target folder for a test path.
    config = labs_root() / "pyproject.toml"
    if config.exists():
        argv.append(f"--config-file={config}")
    if fail_fast:
        argv.append("-x")
    env = dict(os.environ, BUDGETLAB_REPORT_FILE=str(report), BUDGETLAB_GRADING="1")
    outcome = Outcome()
    with open(logs / f"check-{lab.number}.log", "wb") as log:
        proc = subprocess.Popen(argv, cwd=labs_root(), env=env, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        started = time.monotonic()
        try:
            seen = 0
            while True:
                if time.monotonic() - started > DEADLINE_SECONDS:
                    stop_tree(proc)
                    outcome.could_not_grade = (f"the checks did not finish within {DEADLINE_SECONDS} s wall; "
                                               "does a task loop forever or never return?")
                    return outcome
                done = proc.poll() is not None
                lines = report.read_text().splitlines()
                for line in lines[seen:]:
                    entry = json.loads(line)
                    if entry.get("kind") == "timing":
                        outcome.seconds_in_checks += entry["seconds"]
                        continue
                    outcome.results.append(entry)
                    on_result(entry)
                seen = len(lines)
                if done:
                    break
                time.sleep(0.05)
        except BaseException:
            stop_tree(proc)
            raise
        finally:
            report.unlink(missing_ok=True)
    if any(r.get("could_not_grade") for r in outcome.results):
        outcome.could_not_grade = next(r["symptom"] for r in outcome.results if r.get("could_not_grade"))
    elif proc.returncode not in (0, 1):
        outcome.could_not_grade = f"the graders did not run (pytest exit {proc.returncode}); see {log.name}"
    return outcome


def stop_tree(proc: subprocess.Popen, grace: float = 15.0) -> None:
    """Interrupt pytest so its fixtures stop the workers, then kill whatever is left, by PID."""
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
