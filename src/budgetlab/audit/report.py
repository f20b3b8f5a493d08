"""Prints an audit result as text lines, JSON, or SARIF 2.1.0 for code-scanning upload."""

from __future__ import annotations

import json
from typing import TextIO

from budgetlab.audit.findings import AuditResult
from budgetlab.audit.rules import RULES
from budgetlab.audit.runner import relative_uri

FORMATS = ("text", "json", "sarif")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_NAME = "budgetlab-audit"


def summary(result: AuditResult) -> str:
    """The closing line: how many problems, or that all checks passed."""
    count = len(result.findings)
    if count == 0:
        return "All checks passed."
    return f"Found {count} problem{'s' if count != 1 else ''}."


def write(result: AuditResult, fmt: str, out: TextIO, err: TextIO) -> None:
    """Write findings to out in the format; skipped files and (for JSON/SARIF) the summary to err."""
    for skipped in result.skipped:
        err.write(f"{skipped.path}: skipped, {skipped.reason}\n")
    if result.files == 0 and not result.skipped:
        err.write("warning: no Python or launch files found in the given paths\n")
    if fmt == "text":
        for finding in result.findings:
            out.write(
                f"{finding.path}:{finding.line}:{finding.column} {finding.code} "
                f"{finding.message} (lab {finding.lab})\n"
            )
        out.write(summary(result) + "\n")
        return
    document = as_json(result) if fmt == "json" else as_sarif(result)
    out.write(json.dumps(document, indent=2) + "\n")
    err.write(summary(result) + "\n")


def as_json(result: AuditResult) -> dict:
    """Findings and skipped files as plain JSON objects."""
    return {
        "findings": [
            {
                "code": finding.code,
                "lab": finding.lab,
                "path": finding.path,
                "line": finding.line,
                "column": finding.column,
                "message": finding.message,
            }
            for finding in result.findings
        ],
        "skipped": [{"path": skipped.path, "reason": skipped.reason} for skipped in result.skipped],
        "summary": {"problems": len(result.findings), "files": result.files, "lines": result.lines},
    }


def as_sarif(result: AuditResult) -> dict:
    """One SARIF run: every rule in the driver, one result per finding, skipped files as notifications."""
    codes = list(RULES)
    rules = [
        {
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": f"{rule.summary} Taught in lab {rule.lab}."},
            "helpUri": rule.help_uri,
            "help": {"text": f"See lab {rule.lab} and {rule.help_uri}"},
            "defaultConfiguration": {"level": "warning"},
            "properties": {"tags": [f"lab{rule.lab}", "celery"]},
        }
        for rule in RULES.values()
    ]
    results = [
        {
            "ruleId": finding.code,
            "ruleIndex": codes.index(finding.code),
            "level": "warning",
            "message": {"text": f"{finding.message} (lab {finding.lab})"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": relative_uri(finding.path)},
                        "region": {"startLine": finding.line, "startColumn": finding.column},
                    }
                }
            ],
        }
        for finding in result.findings
    ]
    notifications = [
        {
            "level": "warning",
            "message": {"text": f"skipped, {skipped.reason}"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": relative_uri(skipped.path)}}}],
        }
        for skipped in result.skipped
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
                    {"executionSuccessful": True, "toolExecutionNotifications": notifications}
                ],
                "results": results,
            }
        ],
    }
