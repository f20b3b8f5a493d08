"""Times `budgetlab audit` on a tree of a million lines made of installed packages' sources and prints the figures.

Run from the repository root:  python benchmarks/audit_speed.py  (or `make bench`)

The tree is this repository's labs/ and solutions/ (so the audit has
findings to give), then the source of the installed packages in PACKAGES,
taken whole in that order until they hold at least MIN_LINES lines: the same
tree wherever the same versions are installed (`make venv` pins them), and
nothing is copied or downloaded. Django and Celery come first, then the
workshop's other dependencies, which are ordinary library code (none is a
table of data).

Each round audits the whole tree once in this process and measures both wall
time and CPU time (process_time): on a shared machine the wall time also
counts other people's work, so the verdict is the median CPU rate over the
rounds, which must reach TARGET_LINES_PER_SECOND; the script exits 1 when it
does not. Every round must give the same findings; the script prints their
count and a digest so two versions of the audit can be compared on the same
tree (--profile FILE writes a cProfile of one more round, for pstats).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_LINES_PER_SECOND = 80_000
MIN_LINES = 1_000_000
#: Import names, in the order they join the tree; a package that is not installed is passed over.
PACKAGES = (
    "django", "celery", "kombu", "billiard", "amqp", "vine", "redis", "psycopg", "openai", "pydantic",
    "rich", "click", "typer", "anyio", "httpx", "httpcore", "_pytest", "gevent", "eventlet", "playwright",
    "IPython", "tornado", "jinja2", "setuptools", "pip",
)


def package_tree(name: str) -> Path | None:
    """Directory of an installed package, found without importing it; None when it is not installed."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def python_lines(tree: Path) -> int:
    """Lines of the tree's Python files, counted as the audit counts them."""
    total = 0
    for path in tree.rglob("*.py"):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        total += data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    return total


def million_line_tree() -> list[tuple[str, Path, int]]:
    """(name, folder, lines): labs/, solutions/, then PACKAGES in order until MIN_LINES lines are reached."""
    chosen, total = [], 0
    for name in ("labs", "solutions", *PACKAGES):
        tree = ROOT / name if name in ("labs", "solutions") else package_tree(name)
        if tree is None:
            continue
        lines = python_lines(tree)
        chosen.append((name, tree, lines))
        total += lines
        if total >= MIN_LINES:
            return chosen
    raise SystemExit(f"audit_speed: the installed packages of PACKAGES hold {total:,} lines, fewer than "
                     f"{MIN_LINES:,}; run `make venv` first")


def version(name: str) -> str:
    """The installed version of a package, or "?"; the repository's own folders are "here"."""
    if name in ("labs", "solutions"):
        return "here"
    for distribution in (name, name.lstrip("_"), name.lower()):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "?"


def digest(findings) -> str:
    """A short fingerprint of the findings (path, line, code, message), to compare two runs."""
    text = "\n".join(f"{f.path}:{f.line}:{f.column}:{f.code}:{f.message}" for f in sorted(findings))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="audits of the whole tree (default: 3)")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of one more round to FILE")
    options = parser.parse_args(argv)
    if options.rounds < 1:
        print("audit_speed: error: --rounds must be at least 1", file=sys.stderr)
        return 2
    try:
        from budgetlab.audit import audit
    except ModuleNotFoundError:  # a plain checkout, not installed: use its src/
        sys.path.insert(0, os.fspath(Path(__file__).resolve().parents[1] / "src"))
        from budgetlab.audit import audit

    packages = million_line_tree()
    paths = [os.fspath(tree) for _, tree, _ in packages]
    print("tree       " + ", ".join(f"{name} {version(name)}" for name, _, _ in packages))
    # Wall time depends on what else the machine runs; the load average says how busy it was.
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"python     {platform.python_version()} on {os.cpu_count()} CPUs, load average {load} at the start")
    walls, cpus, results = [], [], set()
    for number in range(1, options.rounds + 1):
        start, cpu_start = time.perf_counter(), time.process_time()
        result = audit(paths)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        walls.append(wall)
        cpus.append(cpu)
        results.add((result.files, result.unread, result.lines, len(result.findings), digest(result.findings)))
        print(f"round {number}    {wall:6.2f} s wall, {cpu:6.2f} s CPU: {result.lines / wall:>9,.0f} lines/s wall, "
              f"{result.lines / cpu:>9,.0f} lines/s CPU")
    if len(results) != 1:
        print(f"audit_speed: error: the rounds gave different results: {sorted(results)}", file=sys.stderr)
        return 1
    files, unread, lines, count, fingerprint = results.pop()
    print(f"files      {files:,} read, {unread} not read")
    print(f"lines      {lines:,}")
    print(f"findings   {count} (digest {fingerprint})")
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(f"median     {wall:.2f} s wall, {cpu:.2f} s CPU")
    print(f"lines/s    {lines / wall:,.0f} wall, {lines / cpu:,.0f} CPU (target {TARGET_LINES_PER_SECOND:,} CPU)")
    if options.profile:
        profile = cProfile.Profile()
        profile.runcall(audit, paths)
        profile.dump_stats(options.profile)
        print(f"profile    {options.profile} (python -m pstats {options.profile})")
    # CPU time is the verdict: on a shared machine the wall time also counts other people's work.
    return 0 if lines / cpu >= TARGET_LINES_PER_SECOND else 1


if __name__ == "__main__":
    raise SystemExit(main())
