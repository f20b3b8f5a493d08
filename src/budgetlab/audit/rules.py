"""The catalogue of audit rules: codes, the lab that teaches each one, severities and help texts."""

from __future__ import annotations

from dataclasses import dataclass

# The docs page lives at docs/audit.md; the published site turns it into this
# address. One constant, so a move of the docs site is a one-line change.
DOCS_URL = "https://budgetlab.readthedocs.io/en/latest/audit/"


@dataclass(frozen=True)
class Rule:
    """One check: its code, its lab, a short name and a one-line description."""

    code: str
    #: The workshop lab that shows the failure; None for BL000, which no lab teaches.
    lab: int | None
    name: str
    summary: str
    anchor: str
    #: SARIF level when the finding does not choose its own ("error", "warning", "note").
    severity: str = "warning"
    #: Where a finding of this rule is raised to an error instead, as the severity table says it; "" if never.
    error_when: str = ""

    @property
    def help_uri(self) -> str:
        """Address of the rule's section on the docs page."""
        return DOCS_URL + "#" + self.anchor


RULES: dict[str, Rule] = {
    rule.code: rule
    for rule in (
        Rule(
            "BL000",
            None,
            "unreadable-file",
            "A file the audit was asked to check could not be read or parsed, "
            "so none of its findings are known.",
            "bl000-a-file-the-audit-could-not-read",
            "error",
        ),
        Rule(
            "BL001",
            1,
            "inherited-worker-time-limit",
            "A Celery worker command line sets a time limit from a shell fallback "
            "or an unexplained literal.",
            "bl001-a-time-limit-on-the-worker-command-line",
        ),
        Rule(
            "BL002",
            2,
            "swallowed-soft-time-limit",
            "A catch-all handler in a task's per-item code also swallows "
            "SoftTimeLimitExceeded.",
            "bl002-a-catch-all-that-swallows-the-soft-limit",
            error_when="in a task whose own decorator or class sets `soft_time_limit` "
            "(a warning where the limit comes from a project-wide setting or a worker flag)",
        ),
        Rule(
            "BL003",
            3,
            "queryset-loop-without-isolation",
            "A task loops over a queryset with the work inline and no per-row "
            "isolation.",
            "bl003-a-queryset-sweep-without-per-row-isolation",
        ),
        Rule(
            "BL004",
            4,
            "reference-data-query-per-item",
            "Reference data is queried once per item instead of being cached.",
            "bl004-reference-data-queried-per-item",
        ),
        Rule(
            "BL005",
            5,
            "pg-stats-read-twice-in-transaction",
            "pg_stat_* is read twice in one transaction, so the second read "
            "returns the frozen first snapshot.",
            "bl005-two-pg_stat-reads-in-one-transaction",
        ),
        Rule(
            "BL006",
            6,
            "pool-drops-time-limits",
            "A worker runs a pool (threads, solo, gevent, eventlet) that does not "
            "apply the time limits its tasks declare.",
            "bl006-a-pool-that-does-not-apply-the-time-limits",
        ),
        Rule(
            "BL007",
            7,
            "acks-late-past-visibility-timeout",
            "On a Redis broker, an acks_late task's hard time limit, or a countdown, "
            "reaches the visibility timeout, so the message is delivered again.",
            "bl007-a-budget-that-reaches-the-visibility-timeout",
        ),
        Rule(
            "BL008",
            8,
            "retry-restarts-the-clock",
            "A task's retries wait longer than its own time limit with no deadline, come back in step "
            "after a rate limit, or are swallowed by a catch-all.",
            "bl008-a-retry-that-starts-the-clock-again",
            error_when="where a catch-all handler swallows the `Retry` that a retry call raises "
            "(a warning for the pauses and the retries in step)",
        ),
    )
}


#: Codes --select and --ignore choose from; BL000 is always on, as a run must never be silent.
SELECTABLE = tuple(code for code in RULES if code != "BL000")


class UnknownCode(ValueError):
    """A --select/--ignore/config entry that names no rule."""


def expand_codes(entries: list[str], origin: str) -> set[str]:
    """Turn codes and prefixes ("BL002", "BL00", "ALL") into a set of rule codes.

    Raises UnknownCode when an entry matches no rule; origin names the option or
    file the entry came from, for the error message.
    """
    codes: set[str] = set()
    for raw in entries:
        entry = raw.strip().upper()
        if not entry:
            continue
        if entry == "ALL":
            codes.update(SELECTABLE)
            continue
        matched = {code for code in SELECTABLE if code.startswith(entry)}
        if not matched:
            known = ", ".join(SELECTABLE)
            raise UnknownCode(f"unknown rule code {raw.strip()!r} in {origin} (known: {known})")
        codes |= matched
    return codes


def split_codes(value: str | list[str] | None) -> list[str] | None:
    """Accept "BL001,BL002" or a list of codes; None stays None."""
    if value is None:
        return None
    if isinstance(value, str):
        return [part for part in value.split(",") if part.strip()]
    return [str(part) for part in value]
