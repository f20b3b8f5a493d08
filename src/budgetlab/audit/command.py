"""The argparse front end of the audit, with one-line usage errors instead of argparse's two."""

from __future__ import annotations

import argparse
import sys

from budgetlab.audit.catalogue import DESCRIPTION
from budgetlab.audit.config import KEYS
from budgetlab.audit.report import ALIASES, FORMATS
from budgetlab.audit.rules import RULES


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, raised as _Stop."""

    def error(self, message: str):  # type: ignore[override]
        raise _Stop(message)


class _Stop(Exception):
    pass


def epilog() -> str:
    """Rules, exit codes, noqa and the configuration keys: what --help prints under the options."""
    from budgetlab.audit import EXIT_CODES

    rules = "\n".join(f"  {rule.code}  {rule.name}" for rule in RULES.values())
    codes = "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_CODES.items())
    keys = "\n".join(f"  {key:<17} {meaning}" for key, meaning in KEYS.items())
    return (
        f"rules:\n{rules}\n\nexit codes:\n{codes}\n\n"
        "noqa: `# noqa: BL003` on any line of the flagged statement silences that rule there;\n"
        "  a bare `# noqa` silences every rule on the line.\n\n"
        f"configuration ([tool.budgetlab.audit] in the nearest pyproject.toml):\n{keys}"
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser for budgetlab-audit; every option has a one-line help."""
    parser = _Parser(
        prog="budgetlab-audit",
        description=DESCRIPTION,
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or directories to audit")
    parser.add_argument(
        "--output-format", "--format", dest="output_format", default="full",
        choices=[*FORMATS, *ALIASES], metavar="{" + ",".join(FORMATS) + "}",
        help="output format (default: full)",
    )
    parser.add_argument("--select", help="comma-separated rule codes or prefixes to run, e.g. BL001,BL002")
    parser.add_argument("--ignore", help="comma-separated rule codes or prefixes to skip")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument(
        "--allow-unreadable", action="store_true",
        help="exit 0 or 1 even when a file could not be read (it is still reported as BL000)",
    )
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
