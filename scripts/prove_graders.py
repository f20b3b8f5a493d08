"""Prove a lab's graders: the solution passes, the starter fails, every wrong fix fails, every alternative passes.

(A wall seam, a fix on a clock the lab clock leaves on wall time, fails with
the note that names its line.)

Usage: python scripts/prove_graders.py [-j JOBS] [--skip-transcribed] N [N ...]
(prints one line per case as it ends; exit 1 if any case disagrees)

Wrong fixes and alternatives are declared in each lab's variants file
(labs.toml's `variants`) as a base tree, labs/ or solutions/, plus a small
patch; each is built into a scratch tree and graded there (see
budgetlab.variants; scripts/variant_patch.py writes the patches).

Every case is its own `budgetlab check`, with its own rig (scratch database,
Redis lease, queues, workers) and its own progress folder, so cases run side
by side: as many at once as the machine has cores, unless -j says otherwise.

With --skip-transcribed the solution and starter cases are left out for a lab
that declares the transcripts labN-check-solution and labN-check-starter: the
suite's transcript test re-runs those very checks (`budgetlab check N
--target solutions` must exit 0, `budgetlab check N` exit 1), so within
`make test` each of them runs once and serves both.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from budgetlab import labs, targets, variants
from budgetlab.commands import views
from budgetlab.errors import BudgetlabError


@dataclass(frozen=True)
class Case:
    """One `budgetlab check` of a proof and the exit code it must end with."""

    number: int
    name: str
    target: targets.Target
    expected: int
    fail_fast: bool
    #: A pattern the check's output must match too ('' for none): a wall seam's note.
    says: str = ""

    def agrees(self, code: int, output: str) -> bool:
        """Whether a check that ended so is what this case must end with."""
        return code == self.expected and (not self.says or re.search(self.says, output) is not None)


def check(case: Case, state: Path) -> tuple[int, str]:
    """Run the case's check; return its exit code and its last line (the count of checks passed)."""
    code, output = check_output(case, state)
    return code, views.verdict_line(output)


def check_output(case: Case, state: Path, in_process: bool = False) -> tuple[int, str]:
    """Run the case's check; return its exit code and everything it printed.

    By default as `budgetlab check` in a process of its own. The suite, which
    runs one case at a time per process and has budgetlab imported already,
    grades `in_process`: the same grading (its own pytest, workers and import
    probe) without starting the CLI again, which costs two thirds of a
    CPU-second a case on a machine the suite keeps busy.
    """
    if in_process:
        return _graded_here(case, state)
    argv = [sys.executable, "-m", "budgetlab.cli_entry", "check", str(case.number), "--target", case.target.argument]
    if case.fail_fast:
        argv.append("--fail-fast")
    # Its own progress folder: side-by-side checks never race on one progress file, and a proof is no attempt.
    env = dict(os.environ, BUDGETLAB_STATE_DIR=str(state))
    result = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    return result.returncode, (result.stdout + result.stderr).strip()


def _graded_here(case: Case, state: Path) -> tuple[int, str]:
    """Grade the case in this process, printing what `budgetlab check` prints; its state in `state`."""
    import io

    from rich.console import Console

    from budgetlab.commands import checking

    out = io.StringIO()
    # As the CLI prints: long lines whole (soft_wrap), so a pattern the output must match never meets a line break.
    console = Console(file=out, no_color=True, highlight=False, soft_wrap=True)
    saved = os.environ.get("BUDGETLAB_STATE_DIR")
    os.environ["BUDGETLAB_STATE_DIR"] = str(state)
    try:
        code = checking.grade_aloud(labs.get(case.number), case.target, console, fail_fast=case.fail_fast).exit_code
    except BudgetlabError as exc:
        console.print(f"error: {exc}")
        code = exc.exit_code
    finally:
        if saved is None:
            os.environ.pop("BUDGETLAB_STATE_DIR", None)
        else:
            os.environ["BUDGETLAB_STATE_DIR"] = saved
    return code, out.getvalue().strip()


def transcribed(lab: labs.Lab) -> bool:
    """Whether the lab's transcripts include both checks a proof's solution and starter cases run."""
    declared = {Path(path).stem for path in lab.transcripts}
    return {f"lab{lab.number}-check-solution", f"lab{lab.number}-check-starter"} <= declared


def cases(number: int, scratch: Path, skip_transcribed: bool = False) -> list[Case]:
    """The solution, the starter (unless a transcript test runs them), and every declared variant built into `scratch`."""
    lab = labs.get(number)
    found = []
    if skip_transcribed and transcribed(lab):
        print(f"lab {number} ..   solution and starter: their checks are the transcript tests "
              f"lab{number}-check-solution and lab{number}-check-starter", flush=True)
    else:
        found += base_cases(number)
    found += [variant_case(lab, variant, scratch) for variant in variants.load(lab)]
    return found


def base_cases(number: int) -> list[Case]:
    """The solution, which must pass, and the starter, which must fail."""
    return [Case(number, "solution", targets.resolve("solutions"), 0, False),
            Case(number, "starter", targets.learners(), 1, True)]


def variant_case(lab: labs.Lab, variant: variants.Variant, scratch: Path) -> Case:
    """A wrong fix or alternative, built into `scratch`; a wrong fix stops at its first failed check."""
    tree = targets.resolve(variants.build(lab, variant, scratch / lab.slug))
    return Case(lab.number, f"{variant.kind} {variant.name}", tree, variant.expected_exit, variant.expected_exit == 1,
                variant.must_say(lab))


def prove(numbers: list[int], jobs: int, skip_transcribed: bool = False) -> bool:
    """Run every case of these labs, `jobs` at a time; print each as it ends; True when all agree."""
    with tempfile.TemporaryDirectory(prefix="prove-") as scratch:
        todo = [case for number in numbers for case in cases(number, Path(scratch), skip_transcribed)]

        def run(indexed: tuple[int, Case]) -> bool:
            index, case = indexed
            started = time.monotonic()
            code, output = check_output(case, Path(scratch) / "state" / str(index))
            agrees = case.agrees(code, output)
            missing = "" if agrees or code != case.expected else "  (its output does not name the seam's line)"
            # A case the machine kept from grading on its lab's clock was graded on a slower one: say so.
            again = "  (on a slower clock: the machine was too busy)" if views.GRADING_AGAIN in output else ""
            print(f"lab {case.number} {'ok  ' if agrees else 'FAIL'} {case.name:<40} exit {code} "
                  f"(want {case.expected}) {time.monotonic() - started:5.1f}s  {views.verdict_line(output)}{missing}"
                  f"{again}", flush=True)
            return agrees

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return all(list(pool.map(run, enumerate(todo))))


def main(argv: list[str] | None = None) -> int:
    known = [lab.number for lab in labs.load()]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="cases at once (default: the machine's cores)")
    parser.add_argument("--skip-transcribed", action="store_true",
                        help="leave out the solution and starter cases the transcript tests run")
    parser.add_argument("labs", nargs="*", help="lab numbers (default: every lab)")
    args = parser.parse_args(argv)
    wrong = [arg for arg in args.labs if not arg.isdigit() or int(arg) not in known]
    if wrong or args.jobs < 1:
        print("usage: prove_graders.py [-j JOBS] [--skip-transcribed] [LAB ...]; " + (
              f"no lab {', '.join(wrong)} (the labs are {', '.join(map(str, known))})" if wrong
              else "-j takes 1 or more"), file=sys.stderr)
        return 2
    numbers = [int(arg) for arg in args.labs] or known
    try:
        return 0 if prove(numbers, args.jobs, args.skip_transcribed) else 1
    except BudgetlabError as exc:  # a variants file or patch that does not fit its base
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
