"""Prints an audit result in one of the output formats: full, concise, json, sarif or github."""

from __future__ import annotations

import json
from collections import Counter
from typing import TextIO

from budgetlab.audit.findings import SEVERITIES, AuditResult, Finding
from budgetlab.audit.rules import RULES
from budgetlab.audit.runner import relative_uri

#: The --output-format choices; the names are ruff's where the two tools overlap.
FORMATS = ("full", "concise", "json", "sarif", "github")
#: Names the audit accepted before, and the format each one means now.
ALIASES = {"text": "concise"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "budgetlab-audit"
# GitHub workflow commands know error, warning and notice.
_GITHUB_LEVEL = {"error": "error", "warning": "warning", "note": "notice"}


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def summary(result: AuditResult) -> str:
    """The closing line: the problems found, then how many files were read and how many were not."""
    problems = result.problems
    files = f"{_plural(result.files, 'file')} read, {result.unread:,} not read"
    if result.unread:
        files += " (BL000)"
    if not problems:
        head = "All checks passed." if not result.unread else "No problems in the files read."
        return f"{head} {files}."
    severities = Counter(finding.severity for finding in problems)
    ranked = ", ".join(_plural(severities[level], level) for level in SEVERITIES if severities[level])
    return f"Found {_plural(len(problems), 'problem')} ({ranked}). {files}."


def statistics(result: AuditResult) -> list[str]:
    """One line per rule that fired: count, code, name, as ruff's --statistics prints them."""
    counts = Counter(finding.code for finding in result.findings)
    return [f"{counts[code]:>5}\t{code}\t{RULES[code].name}" for code in RULES if counts[code]]


def write(result: AuditResult, fmt: str, out: TextIO, err: TextIO, show_statistics: bool = False) -> None:
    """Write the findings to out in the format; notices and, for documents, the summary line go to err."""
    fmt = ALIASES.get(fmt, fmt)
    for skipped in result.skipped:
        err.write(f"{skipped.path}: not audited, {skipped.reason}\n")
    if result.files == 0 and not result.unread and not result.skipped:
        err.write("warning: no Python or launch files found in the given paths\n")
    if show_statistics and fmt in ("full", "concise"):
        for line in statistics(result):
            out.write(line + "\n")
        out.write(summary(result) + "\n")
        return
    if fmt in ("full", "concise", "github"):
        for finding in result.findings:
            if fmt == "full":
                out.write(full(finding, result.sources.get(finding.path)))
            elif fmt == "concise":
                out.write(concise(finding) + "\n")
            else:
                out.write(github(finding) + "\n")
        (out if fmt != "github" else err).write(summary(result) + "\n")
        return
    document = as_json(result) if fmt == "json" else as_sarif(result)
    out.write(json.dumps(document, indent=2) + "\n")
    err.write(summary(result) + "\n")


def concise(finding: Finding) -> str:
    """`path:line:col: CODE [severity] title`, one line."""
    return f"{finding.path}:{finding.line}:{finding.column}: {finding.code} [{finding.severity}] {finding.message}"


def full(finding: Finding, lines: list[str] | None) -> str:
    """The concise line, the source line with a caret under the column, and the rule's help link."""
    parts = [concise(finding)]
    if lines and 0 < finding.line <= len(lines):
        raw = lines[finding.line - 1]
        # Tabs are shown as spaces; the caret moves with them.
        indent = len(raw[: finding.column - 1].expandtabs(4))
        number = str(finding.line)
        gutter = " " * len(number)
        parts += [
            f"{gutter} |",
            f"{number} | {raw.expandtabs(4)}",
            f"{gutter} | {' ' * indent}^ {finding.code}",
        ]
        parts.append(f"{gutter} = help: {finding.rule.help_uri}")
    else:
        parts.append(f"  = help: {finding.rule.help_uri}")
    return "\n".join(parts) + "\n\n"


def github(finding: Finding) -> str:
    """A GitHub Actions workflow command that annotates the line in a pull request."""
    level = _GITHUB_LEVEL[finding.severity]
    end = max(finding.line, finding.end_line)
    return (
        f"::{level} title=budgetlab ({finding.code}),file={finding.path},line={finding.line},"
        f"col={finding.column},endLine={end}::{concise(finding)}"
    )


def as_json(result: AuditResult) -> dict:
    """Findings, files not audited and a summary as plain JSON objects."""
    return {
        "findings": [
            {
                "code": finding.code,
                "severity": finding.severity,
                "path": finding.path,
                "line": finding.line,
                "column": finding.column,
                "end_line": max(finding.line, finding.end_line),
                "message": finding.message,
                "url": finding.rule.help_uri,
            }
            for finding in result.findings
        ],
        "skipped": [{"path": skipped.path, "reason": skipped.reason} for skipped in result.skipped],
        "summary": {
            "problems": len(result.problems),
            "files": result.files,
            "unread": result.unread,
            "lines": result.lines,
        },
    }


def _location(path: str, line: int | None = None, column: int | None = None, end: int | None = None) -> dict:
    physical: dict = {"artifactLocation": {"uri": relative_uri(path)}}
    if line is not None:
        physical["region"] = {"startLine": line, "startColumn": column, "endLine": max(line, end or line)}
    return {"physicalLocation": physical}


def as_sarif(result: AuditResult) -> dict:
    """One SARIF 2.1.0 run: every rule in the driver, one result per finding, one notification per unread file."""
    codes = list(RULES)
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {
                "text": rule.summary + (f" Lab {rule.lab} of the budgetlab workshop shows it." if rule.lab else "")
            },
            "helpUri": rule.help_uri,
            "help": {"text": f"What it finds, why it matters and how to fix it: {rule.help_uri}"},
            "defaultConfiguration": {"level": rule.severity},
            "properties": {"tags": ["celery"] + ([f"lab{rule.lab}"] if rule.lab else [])},
        }
        for rule in RULES.values()
    ]
    results = [
        {
            "ruleId": finding.code,
            "ruleIndex": codes.index(finding.code),
            "level": finding.severity,
            "message": {"text": finding.message},
            "locations": [_location(finding.path, finding.line, finding.column, finding.end_line)],
        }
        for finding in result.findings
    ]
    notifications = [
        {
            "level": "error",
            "message": {"text": f"{finding.path}: {finding.message}"},
            "descriptor": {"id": "BL000", "index": codes.index("BL000")},
            "locations": [_location(finding.path)],
        }
        for finding in result.findings
        if finding.code == "BL000"
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": TOOL_NAME,
                        "informationUri": RULES["BL001"].help_uri.split("#")[0],
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        # A run that could not read every file did not finish its job.
                        "executionSuccessful": result.unread == 0,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
            }
        ],
    }
