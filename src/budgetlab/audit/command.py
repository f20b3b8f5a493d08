"""The argparse front end of the audit, with one-line usage errors instead of argparse's two."""

from __future__ import annotations

import argparse
import sys

from budgetlab.audit.report import FORMATS
from budgetlab.audit.rules import RULES


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, raised as _Stop."""

    def error(self, message: str):  # type: ignore[override]
        raise _Stop(message)


class _Stop(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    """The parser for budgetlab-audit; every option has a one-line help."""
    codes = ", ".join(f"{rule.code} (lab {rule.lab})" for rule in RULES.values())
    parser = _Parser(
        prog="budgetlab-audit",
        description="Find the five failures the budgetlab labs teach in your own code base.",
        epilog=f"Rules: {codes}. Exit codes: 0 clean, 1 findings, 2 usage error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to audit")
    parser.add_argument("--format", default="text", choices=FORMATS, help="output format (default: text)")
    parser.add_argument("--select", help="comma-separated rule codes or prefixes to run, e.g. BL001,BL002")
    parser.add_argument("--ignore", help="comma-separated rule codes or prefixes to skip")
    return parser


def parse_arguments(argv: list[str] | None) -> argparse.Namespace | int:
    """Parsed arguments, or an exit code when parsing ended (help shown: 0, bad usage: 2)."""
    parser = build_parser()
    try:
        return parser.parse_args(argv)
    except _Stop as stop:
        sys.stderr.write(f"budgetlab-audit: error: {stop}\n")
        return 2
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
