"""Plain records the checkers produce and the reports print: findings, unread files, the run's figures."""

from __future__ import annotations

from dataclasses import dataclass, field

from budgetlab.audit.rules import RULES

#: Severities, most urgent first, in SARIF's words.
SEVERITIES = ("error", "warning", "note")


@dataclass(frozen=True, order=True)
class Finding:
    """One problem at one place; line and column are 1-based.

    message is the short title a person reads in a list; the reasoning
    behind it lives on the rule's docs page (RULES[code].help_uri).
    """

    path: str
    line: int
    column: int
    code: str
    message: str = field(compare=False)
    severity: str = field(default="warning", compare=False)
    #: Last line of the flagged statement, so that `# noqa` on any of its lines counts.
    end_line: int = field(default=0, compare=False)

    @property
    def rule(self):
        """The catalogue entry of the finding's code."""
        return RULES[self.code]


@dataclass(frozen=True, order=True)
class Skipped:
    """A file named on the command line that is neither Python nor a launch file, so not audited."""

    path: str
    reason: str


@dataclass
class AuditResult:
    """Everything one audit run found, plus the figures the summary and the benchmark print."""

    findings: list[Finding] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    files: int = 0
    lines: int = 0
    #: Files the audit meant to read and could not; each is also a BL000 finding.
    unread: int = 0
    #: Source lines of the files that have findings, for the snippets of the full format.
    sources: dict[str, list[str]] = field(default_factory=dict)

    @property
    def problems(self) -> list[Finding]:
        """Findings of the rules proper, without the BL000 notes on unread files."""
        return [finding for finding in self.findings if finding.code != "BL000"]
