"""Keeps what a run of `make test` measured in tests/test_seconds.json, which places the suite's whole checks.

Each pass of `make test` writes what each of its tests took (setup, call and
teardown) to .budgetlab/logs/test-seconds-PASS.json; this keeps, per pass,
the whole checks and the tests of a second or more by id and the rest as one
sum (budgetlab.commands.testplan says how they are used). Record from a
run on a quiet machine, after a change that makes checks much longer or
shorter or adds many: a stale table still runs every test, less evenly spread.

Usage:
    python scripts/test_seconds.py          # from .budgetlab/logs
    python scripts/test_seconds.py FOLDER   # from another run's logs folder
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from budgetlab.commands import testplan
from budgetlab.paths import display_path, logs_dir, repo_root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="the logs folder of a run of make test")
    folder = parser.parse_args(argv).folder or logs_dir()
    prefix, suffix = testplan.SECONDS_LOG.split("{}")
    tables = {}
    for path in sorted(folder.glob(testplan.SECONDS_LOG.format("*"))):
        try:
            tables[path.name[len(prefix):-len(suffix)]] = testplan.kept(json.loads(path.read_text()))
        except (OSError, ValueError, AttributeError) as exc:
            print(f"error: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    if testplan.FIRST not in tables:
        print(f"error: {folder} holds no {testplan.SECONDS_LOG.format(testplan.FIRST)}; run make test first",
              file=sys.stderr)
        return 2
    target = repo_root() / testplan.SECONDS_FILE
    target.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
    counts = ", ".join(f"{name} {len(table) - 1}" for name, table in sorted(tables.items()))
    print(f"kept the seconds of each pass's longer tests ({counts}) in {display_path(target)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
