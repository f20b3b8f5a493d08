"""Times `budgetlab audit` on the installed Django and Celery source trees and prints the figures.

Run from the repository root:  python benchmarks/audit_speed.py  (or `make bench`)
The target is 10 seconds or less on a 2-core machine; the script exits 1
when the audit's CPU time exceeds it.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import sys
import time
from pathlib import Path

TARGET_SECONDS = 10.0


def package_tree(name: str) -> Path:
    """Directory of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"audit_speed: {name} is not installed in this interpreter ({sys.executable})")
    return Path(list(spec.submodule_search_locations)[0])


def main() -> int:
    try:
        from budgetlab.audit import audit
    except ModuleNotFoundError:  # a plain checkout, not installed: use its src/
        sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1] / "src"))
        from budgetlab.audit import audit

    trees = [package_tree("django"), package_tree("celery")]
    start, cpu_start = time.perf_counter(), time.process_time()
    result = audit([os.fspath(tree) for tree in trees])
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    for tree in trees:
        print(f"tree       {tree}")
    # Wall time depends on what else the machine runs; the load average says how busy it was.
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"python     {platform.python_version()} on {os.cpu_count()} CPUs, load average {load}")
    print(f"files      {result.files} read, {result.unread} not read, {len(result.skipped)} not audited")
    print(f"lines      {result.lines}")
    print(f"findings   {len(result.findings)}")
    print(f"seconds    {seconds:.2f} wall, {cpu_seconds:.2f} CPU (target {TARGET_SECONDS:.0f})")
    print(f"lines/s    {result.lines / seconds:,.0f} wall, {result.lines / cpu_seconds:,.0f} CPU")
    # CPU time is the verdict: on a shared machine the wall time also counts other people's work.
    return 0 if cpu_seconds <= TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
