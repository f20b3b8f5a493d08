"""Plain records the checkers produce and the reports print: findings and skipped files."""

from __future__ import annotations

from dataclasses import dataclass, field

from budgetlab.audit.rules import RULES


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place; line and column are 1-based."""

    path: str
    line: int
    column: int
    code: str
    message: str = field(compare=False)

    @property
    def lab(self) -> int:
        """Number of the lab that teaches the fix."""
        return RULES[self.code].lab


@dataclass(frozen=True, order=True)
class Skipped:
    """A file the audit could not read or parse, with the reason in a few words."""

    path: str
    reason: str


@dataclass
class AuditResult:
    """Everything one audit run found, plus the figures the benchmark prints."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0
    lines: int = 0
