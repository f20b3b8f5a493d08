"""Lab 4's benchmark: uncached category lookups (labs/) against cached ones (solutions/), side by side.

Run from the repository root, with the stack up:

    .venv/bin/python benchmarks/lab4_cache.py [--rounds 3] [--uncached labs] [--cached solutions]

Each round runs the batch of `budgetlab run 4` (500 documents, 2,000
transactions, one batch process, real PostgreSQL) once per tree, the two
trees alternating, each on a fresh copy of the seeded database. The table
shows the median of each figure and the ratio uncached / cached. Wall
times are real; only the fake OCR sleeps on the lab clock.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tree(value: str) -> Path:
    path = (ROOT / value) if value in ("labs", "solutions") else Path(value).resolve()
    if not (path / "lab4_extraction_batch" / "categories.py").is_file():
        raise SystemExit(f"lab4_cache: {path} has no lab4_extraction_batch/categories.py")
    return path


def measure(target: Path):
    from budgetlab.harness.rig import Rig
    from budgetlab.scenarios.lab4 import run_batch

    with Rig(target, label="bench4") as rig:
        return run_batch(rig)


def shown(path: Path) -> str:
    """Return a tree's path as a reader types it: relative to the checkout when it is inside it."""
    return f"{path.relative_to(ROOT)}/" if path.is_relative_to(ROOT) else str(path)


def ratio(slow: float, fast: float) -> str:
    return f"{slow / fast:,.0f}x" if fast else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="batches per tree (default 3; medians are shown)")
    parser.add_argument("--uncached", default="labs", help="tree with the uncached lookups (default labs)")
    parser.add_argument("--cached", default="solutions", help="tree with the cached lookups (default solutions)")
    args = parser.parse_args()
    from budgetlab import stack
    from budgetlab.errors import BudgetlabError
    from budgetlab.inworker import clock
    from budgetlab.scenarios.lab4 import DOCUMENTS, TRANSACTIONS, BatchFailed

    trees = {"uncached": tree(args.uncached), "cached": tree(args.cached)}
    try:
        stack.require()
        runs = {name: [] for name in trees}
        for number in range(1, args.rounds + 1):
            for name, path in trees.items():
                figures = measure(path)
                runs[name].append(figures)
                print(f"round {number} {name:<8} {figures.wall_seconds:6.2f} s wall, scans {figures.scans:,}",
                      file=sys.stderr, flush=True)
    except (BudgetlabError, BatchFailed) as exc:
        print(f"lab4_cache: {exc}", file=sys.stderr)
        return 2

    def median(name: str, field: str) -> float:
        return statistics.median(getattr(f, field) for f in runs[name])

    rows = DOCUMENTS + TRANSACTIONS
    figures = [
        ("batch wall time", "wall_seconds", lambda v: f"{v:.2f} s"),
        ("category-table scans", "scans", lambda v: f"{v:,.0f}"),
        ("queries per row", "queries_per_row", lambda v: f"{v:.4g}"),
        ("time in lookups", "lookup_seconds", lambda v: f"{v:.3f} s"),
    ]
    print(f"lab 4 benchmark: {DOCUMENTS} documents + {TRANSACTIONS:,} transactions = {rows:,} rows per batch, "
          f"{args.rounds} round(s), medians")
    print(f"python {platform.python_version()} on {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}; {clock.describe()}")
    print(f"uncached: {shown(trees['uncached'])}\ncached:   {shown(trees['cached'])}\n")
    print(f"{'':<22}{'uncached':>14}{'cached':>14}{'ratio':>10}")
    for label, field, show in figures:
        slow, fast = median("uncached", field), median("cached", field)
        print(f"{label:<22}{show(slow):>14}{show(fast):>14}{ratio(slow, fast):>10}")
    slow_call = median("uncached", "lookup_seconds") / median("uncached", "lookup_calls") * 1000
    fast_call = median("cached", "lookup_seconds") / median("cached", "lookup_calls") * 1000
    print(f"{'one lookup call':<22}{slow_call:>11.3f} ms{fast_call:>11.3f} ms{ratio(slow_call, fast_call):>10}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
