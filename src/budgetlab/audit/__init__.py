"""`budgetlab audit`: a static checker for the failures the labs teach, in your own code base.

It reads Python files with the standard library's ast module (syntax newer
than the running interpreter is first rewritten with tree-sitter's Python
grammar, see lowering.py) and launch files (shell scripts, Dockerfiles,
compose and Kubernetes YAML, Procfiles, unit files) as text lines; it never
imports or runs the code it audits.
"""

from __future__ import annotations

import sys
from typing import TextIO

from budgetlab.audit.findings import AuditResult, Finding, Skipped
from budgetlab.audit.report import ALIASES, FORMATS, write
from budgetlab.audit.rules import RULES, split_codes
from budgetlab.audit.runner import UsageError, audit

__all__ = ["RULES", "AuditResult", "Finding", "Skipped", "audit", "exit_code", "main", "run_audit"]

#: What each exit code means; --help and the docs print this table.
EXIT_CODES = {
    0: "no problems, and every file was read",
    1: "problems found",
    2: "a usage error, or a file that could not be read (BL000) without --allow-unreadable",
}


def exit_code(result: AuditResult, allow_unreadable: bool = False) -> int:
    """2 when a file was not read (unless allowed), else 1 on problems, else 0."""
    if result.unread and not allow_unreadable:
        return 2
    return 1 if result.problems else 0


def run_audit(
    paths: list[str],
    fmt: str = "full",
    select: str | None = None,
    ignore: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    allow_unreadable: bool = False,
    show_statistics: bool = False,
) -> int:
    """Audit paths and print the result; return the exit code (see EXIT_CODES).

    select and ignore take comma-separated codes or prefixes ("BL002",
    "BL00"). A usage error is one line on err, never a traceback.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if fmt not in FORMATS and fmt not in ALIASES:
        err.write(f"budgetlab audit: error: unknown format {fmt!r} (choose from {', '.join(FORMATS)})\n")
        return 2
    try:
        result = audit(list(paths), split_codes(select), split_codes(ignore))
    except UsageError as exc:
        err.write(f"budgetlab audit: error: {exc}\n")
        return 2
    write(result, fmt, out, err, show_statistics)
    return exit_code(result, allow_unreadable)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: budgetlab-audit PATH... [--output-format ...] [--select ...] [--ignore ...]."""
    from budgetlab.audit.command import parse_arguments

    parsed = parse_arguments(argv)
    if isinstance(parsed, int):
        return parsed
    return run_audit(
        parsed.paths, parsed.output_format, parsed.select, parsed.ignore,
        allow_unreadable=parsed.allow_unreadable, show_statistics=parsed.statistics,
    )
