"""Benchmark: wall time of `budgetlab check N` per lab and target (median of 5) and of `budgetlab list`.

Targets, on a quiet 2-core machine: the median over every lab's solution
and starter 5 s or less, no lab above 8 s (10 s with two busy loops:
benchmarks/grader_stability.py measures that, and flips); list under 1 s. The floor of a check is the time inside its checks and
their fixtures (worker starts and stops, scenarios on the lab clock,
database copies); the rest, wall minus floor, is the harness: the CLI,
pytest's start and collection.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from budgetlab import labs

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
MEDIAN_MOST, LAB_MOST = 5.0, 8.0  # seconds, quiet machine


def timed(*args: str) -> tuple[float, int]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], capture_output=True, text=True)
    return time.perf_counter() - started, result.returncode


def check_in_process(lab, target: str) -> tuple[float, float, int]:
    """Return wall seconds, the floor (time inside the checks and their fixtures: worker starts,
    scenarios on the lab clock, database copies) and the exit code."""
    from budgetlab import targets
    from budgetlab.commands import checking

    started = time.perf_counter()
    outcome = checking.grade(lab, targets.resolve(target))
    return time.perf_counter() - started, outcome.seconds_in_checks, outcome.exit_code


def main() -> int:
    list_times = [timed("list")[0] for _ in range(RUNS)]
    print(f"budgetlab list: median {statistics.median(list_times):.2f} s (target < 1 s)")
    medians = []
    for lab in labs.load():
        if not lab.solution_dir().is_dir():
            continue
        for target in ("solutions", "labs"):
            runs = [check_in_process(lab, target) for _ in range(RUNS)]
            walls = [wall for wall, _floor, _code in runs]
            floor = statistics.median(floor for _wall, floor, _code in runs)
            codes = sorted({code for _wall, _floor, code in runs})
            median = statistics.median(walls)
            medians.append(median)
            print(f"budgetlab check {lab.number} --target {target:9}: median {median:5.1f} s "
                  f"(min {min(walls):.1f}, max {max(walls):.1f}; target <= {LAB_MOST:g} s); floor {floor:.1f} s, "
                  f"harness {median - floor:.1f} s, ratio {median / floor if floor else float('nan'):.2f}; "
                  f"exit codes {codes}")
    print(f"median over {len(medians)} lab checks: {statistics.median(medians):.1f} s (target <= {MEDIAN_MOST:g} s); "
          f"slowest {max(medians):.1f} s (target <= {LAB_MOST:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
