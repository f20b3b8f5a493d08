"""The command Kontor measured with: print a table's scan rate for each window.

Run it from the labs/ folder, with the stack up and Kontor pointed at it:

    eval "$(../.venv/bin/budgetlab stack env)"
    ../.venv/bin/python -m lab5_stats_sampler.measure books_category --window 1 --windows 5
"""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab5_stats_sampler.measure",
                                     description="Print a table's sequential-scan rate for each window.")
    parser.add_argument("table", nargs="?", default="books_category", help="table to watch (default: books_category)")
    parser.add_argument("--window", type=float, default=1.0, help="window length in seconds (default: 1)")
    parser.add_argument("--windows", type=int, default=5, help="number of windows (default: 5)")
    args = parser.parse_args(argv)
    if args.window <= 0 or args.windows < 1:
        parser.error("--window must be above 0 and --windows at least 1")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.db import DatabaseError

    try:
        import django

        django.setup()
        from lab5_stats_sampler import sampler

        rates = sampler.scan_rates(args.table, args.window, args.windows)
    except (LookupError, ImproperlyConfigured, DatabaseError) as exc:
        print(f"error: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    for number, rate in enumerate(rates, 1):
        print(f"window {number}  {rate:8.1f} scans/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
