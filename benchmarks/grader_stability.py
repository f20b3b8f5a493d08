"""Benchmark: do `budgetlab check N` verdicts hold under CPU load, and how long do they take, quiet and loaded?

For each lab and both targets (the starter in labs/ must fail with exit 1,
solutions/ must pass with exit 0) it runs `budgetlab check N` K times as
the machine is, then L times while two CPU-bound busy loops that it
starts (and stops, by PID) compete for the cores. A flip is a run whose
exit code is not the expected one. It prints every run as it ends, then
one table: flips and median/max wall per lab and target, quiet and
loaded side by side, with the load average seen during each half.

    python benchmarks/grader_stability.py                  # every lab, 5 quiet and 3 loaded runs each
    python benchmarks/grader_stability.py --quiet 1 --loaded 1 --labs 4,5
    python benchmarks/grader_stability.py --variants       # every wrong fix and alternative too
    python benchmarks/grader_stability.py --alternatives   # every alternative too (the correct fixes)
    python benchmarks/grader_stability.py --quiet 0 --loaded 0 --side-by-side 2   # checks at once, as the suite runs them

"Side by side" runs each lab and target S times with --jobs checks at once
(default: one per core), each with its own rig, the way
scripts/prove_graders.py runs a lab's cases: their verdicts must not flip
either. Its wall times are those of a check sharing the machine with others.

Targets: no flips; median wall of every check at most 10 s quiet and
15 s loaded on a 2-core machine. "Quiet" means whatever else runs on the
machine; the load averages printed say how quiet it was.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab import labs, targets, variants
from budgetlab.commands import views

EXPECTED = {"labs": 1, "solutions": 0}
BUSY_LOOPS = 2
QUIET_TARGET, LOADED_TARGET = 10.0, 15.0


@dataclass
class Runs:
    """The runs of one lab, target and condition."""

    walls: list[float] = field(default_factory=list)
    flips: list[str] = field(default_factory=list)
    loads: list[float] = field(default_factory=list)

    def summary(self, target_seconds: float) -> str:
        """flips/runs, median wall (marked '!' when over the target), max wall, mean load average."""
        if not self.walls:
            return f"{'-':<7}{'-':>7} {'-':>6} {'-':>6}"
        median = statistics.median(self.walls)
        mark = " " if median <= target_seconds else "!"
        flips = f"{len(self.flips)}/{len(self.walls)}"
        return (f"{flips:<7}{median:6.1f}{mark}{max(self.walls):6.1f} {statistics.mean(self.loads):6.1f}")


def check(number: int, target: str) -> tuple[float, int, str, list[str]]:
    """Run `budgetlab check N --target T` as a learner would.

    Returns wall seconds, the exit code, the last line, and each failed
    check's title with its symptom (the line below it), to say what flipped.
    """
    # A progress folder of its own: checks side by side never race on one file, and a run here is no attempt.
    with tempfile.TemporaryDirectory(prefix="stability-") as state:
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", "check", str(number), "--target", target],
                                capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                env=dict(os.environ, BUDGETLAB_STATE_DIR=state))
        wall = time.perf_counter() - started
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    failed = [f"{line} {lines[i + 1] if i + 1 < len(lines) else ''}".strip()
              for i, line in enumerate(lines) if line.startswith("✗")]
    return wall, result.returncode, views.verdict_line(result.stdout + result.stderr), failed


class BusyLoops:
    """Two CPU-bound processes, started and stopped by PID: the 'loaded' condition."""

    def __init__(self, count: int = BUSY_LOOPS):
        self.count = count
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "BusyLoops":
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                               stdin=subprocess.DEVNULL))
        return self

    def __exit__(self, *exc) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()


def cases(numbers: list[int], kinds: set[str], scratch: Path) -> dict[tuple[int, str], tuple[str, int]]:
    """Return (lab, name) -> (the --target argument, the exit code a check must give) for every case to run.

    `kinds` names the variants to add to each lab's solution and starter ("wrong fix", "alternative").
    """
    found = {(number, name): (name, expected) for number in numbers for name, expected in EXPECTED.items()}
    for number in numbers:
        lab = labs.get(number)
        for variant in variants.load(lab):
            if variant.kind in kinds:
                tree = targets.resolve(variants.build(lab, variant, scratch))
                found[(number, variant.name)] = (tree.argument, variant.expected_exit)
    return found


def run_condition(todo_cases: dict, repeats: int, condition: str, results: dict, jobs: int = 1) -> None:
    """Run every case `repeats` times, `jobs` checks at once; record and print each run as it ends."""
    todo = [key for key in todo_cases for _ in range(repeats)]

    def one(item: tuple[int, str]) -> None:
        number, target = item
        argument, expected = todo_cases[item]
        load = os.getloadavg()[0]
        wall, code, last, failed = check(number, argument)
        runs = results.setdefault((number, target, condition), Runs())
        runs.walls.append(wall)
        runs.loads.append(load)
        flipped = code != expected
        if flipped:
            runs.flips.append(f"exit {code}: {'; '.join(failed) if expected == 0 and failed else last}")
        print(f"  lab {number} {target:<9.32} {condition:<6} {wall:5.1f} s  exit {code}"
              f"{'  FLIP (want ' + str(expected) + ')' if flipped else ''}  load {load:.1f}  {last}",
              flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, todo))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", type=int, default=5, metavar="K", help="runs per lab and target as the machine is")
    parser.add_argument("--loaded", type=int, default=3, metavar="L",
                        help=f"runs per lab and target with {BUSY_LOOPS} busy loops")
    parser.add_argument("--side-by-side", type=int, default=0, metavar="S",
                        help="runs per lab and target with --jobs checks at once")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="checks at once in the side-by-side runs (default: the machine's cores)")
    parser.add_argument("--labs", default="", help="comma-separated lab numbers (default: every lab)")
    parser.add_argument("--variants", action="store_true",
                        help="also every wrong fix (must fail) and alternative (must pass) of each lab")
    parser.add_argument("--alternatives", action="store_true",
                        help="also every alternative (must pass) of each lab: the correct fixes a learner may write")
    args = parser.parse_args(argv)
    known = [lab.number for lab in labs.load()]
    try:
        numbers = [int(n) for n in args.labs.split(",") if n.strip()] or known
    except ValueError:
        print(f"error: --labs takes lab numbers such as 1,4 (the labs are {', '.join(map(str, known))})",
              file=sys.stderr)
        return 2
    unknown = [n for n in numbers if n not in known]
    if unknown or min(args.quiet, args.loaded, args.side_by_side) < 0 or args.jobs < 1:
        print(f"error: no lab {', '.join(map(str, unknown))} (the labs are {', '.join(map(str, known))})"
              if unknown else "error: --quiet, --loaded and --side-by-side take 0 or more runs, --jobs 1 or more",
              file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory(prefix="stability-variants-") as scratch:
        kinds = {"wrong fix", "alternative"} if args.variants else {"alternative"} if args.alternatives else set()
        todo = cases(numbers, kinds, Path(scratch))
        results = measure(todo, args)
    return report(todo, results, args)


def measure(todo: dict, args) -> dict[tuple[int, str, str], Runs]:
    """Run every case quiet, loaded and side by side, as many times as asked; return the runs by case and condition."""
    results: dict[tuple[int, str, str], Runs] = {}
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    run_condition(todo, args.quiet, "quiet", results)
    if args.loaded:
        with BusyLoops():
            run_condition(todo, args.loaded, "loaded", results)
    if args.side_by_side:
        started = time.perf_counter()
        run_condition(todo, args.side_by_side, "beside", results, jobs=args.jobs)
        print(f"side by side: {len(todo) * args.side_by_side} checks, {args.jobs} at once, "
              f"in {time.perf_counter() - started:.1f} s; load average {os.getloadavg()[0]:.1f} at the end", flush=True)
    return results


def report(todo: dict, results: dict, args) -> int:
    """Print the table and every flip; return 1 when any run flipped."""
    conditions = [("quiet", QUIET_TARGET, f"quiet (median <= {QUIET_TARGET:g} s)"),
                  ("loaded", LOADED_TARGET, f"loaded, {BUSY_LOOPS} busy loops (median <= {LOADED_TARGET:g} s)")]
    if args.side_by_side:
        # A check sharing the machine with others is held to the loaded target.
        conditions.append(("beside", LOADED_TARGET, f"{args.jobs} at once (median <= {LOADED_TARGET:g} s)"))
    print(f"\n{'':32} " + "".join(f"{title:<40}" for _, _, title in conditions))
    print(f"{'':32} " + "".join(f"{'flips  median    max   load':<40}" for _ in conditions))
    flips = 0
    for number, target in todo:
        cells = []
        for condition, goal, _title in conditions:
            runs = results.get((number, target, condition), Runs())
            flips += len(runs.flips)
            cells.append(runs.summary(goal).ljust(40))
        print(f"lab {number} {target[:26]:<26} {''.join(cells)}")
    for (number, target, condition), runs in sorted(results.items()):
        for flip in runs.flips:
            print(f"flip: lab {number} {target} {condition}: {flip}")
    print(f"{flips} flips in {sum(len(r.walls) for r in results.values())} runs; '!' marks a median over its target")
    return 1 if flips else 0


if __name__ == "__main__":
    sys.exit(main())
