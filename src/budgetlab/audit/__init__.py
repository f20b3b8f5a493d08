"""`budgetlab audit`: a static checker for the five failures the labs teach, in your own code base.

It reads Python files with the standard library's ast module and launch files
(shell scripts, Dockerfiles, compose and Kubernetes YAML, Procfiles, unit
files) as text lines; it never imports or runs the code it audits.
"""

from __future__ import annotations

import sys
from typing import TextIO

from budgetlab.audit.findings import AuditResult, Finding, Skipped
from budgetlab.audit.report import FORMATS, write
from budgetlab.audit.rules import RULES, split_codes
from budgetlab.audit.runner import UsageError, audit

__all__ = ["RULES", "AuditResult", "Finding", "Skipped", "audit", "main", "run_audit"]


def run_audit(
    paths: list[str],
    fmt: str = "text",
    select: str | None = None,
    ignore: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Audit paths and print the result; return 0 when clean, 1 on findings, 2 on a usage error.

    select and ignore take comma-separated codes or prefixes ("BL002",
    "BL00"). A usage error is one line on err, never a traceback.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    if fmt not in FORMATS:
        err.write(f"budgetlab audit: error: unknown format {fmt!r} (choose from {', '.join(FORMATS)})\n")
        return 2
    try:
        result = audit(list(paths), split_codes(select), split_codes(ignore))
    except UsageError as exc:
        err.write(f"budgetlab audit: error: {exc}\n")
        return 2
    write(result, fmt, out, err)
    return 1 if result.findings else 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: budgetlab-audit PATH... [--format ...] [--select ...] [--ignore ...]."""
    from budgetlab.audit.command import parse_arguments

    parsed = parse_arguments(argv)
    if isinstance(parsed, int):
        return parsed
    return run_audit(parsed.paths, parsed.format, parsed.select, parsed.ignore)
