"""docs/audit.md keeps up with the rule catalogue: one section per rule, each answering the same four questions."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetlab.audit import RULES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "audit.md"
PARTS = ("**What it finds.**", "**Why it matters.**", "**How to fix.**", "**False positives.**")


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _sections() -> dict[str, str]:
    text = PAGE.read_text(encoding="utf-8")
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2], strict=True)}


@pytest.mark.parametrize("code", list(RULES))
def test_each_rule_has_a_section_its_help_link_points_at(code):
    """The heading of a rule's section gives exactly the anchor that SARIF's helpUri uses."""
    rule = RULES[code]
    headings = [heading for heading in _sections() if heading.startswith(code + ":")]
    assert len(headings) == 1, f"docs/audit.md needs exactly one '## {code}: ...' section, found {headings}"
    assert _slug(headings[0]) == rule.anchor, (
        f"the heading '{headings[0]}' makes the anchor #{_slug(headings[0])}, "
        f"but {code}'s helpUri ends in #{rule.anchor}"
    )


@pytest.mark.parametrize("code", list(RULES))
def test_each_rule_section_answers_the_four_questions(code):
    """Each rule's section says what it finds, why it matters, how to fix and how to silence it, and links its lab."""
    body = next(body for heading, body in _sections().items() if heading.startswith(code + ":"))
    missing = [part for part in PARTS if part not in body]
    assert not missing, f"the {code} section lacks {missing}"
    if RULES[code].lab is not None:
        assert f"labs/lab{RULES[code].lab}.md" in body, f"the {code} section does not link its lab page"
        assert f"# noqa: {code}" in body, f"the {code} section does not show how to silence it"
    else:  # BL000 is about a file that could not be read: no line to put a noqa on
        assert "--allow-unreadable" in body, f"the {code} section does not say how to let the run pass"


# A count written by hand ("five failure shapes", "all six") drifts when a rule is added.
COUNTED = re.compile(
    r"\b(?:\d+|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\s+"
    r"(?:rules?|shapes?|failures?|failure shapes|checks)\b|\ball (?:two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)


def test_generated_blocks_match_the_registry():
    """The rules table, the severity table and the `select` example on the page are what the registry gives."""
    from budgetlab.audit import catalogue

    text = PAGE.read_text(encoding="utf-8")
    assert catalogue.render(text) == text, (
        "docs/audit.md disagrees with the rule registry; run: python -m budgetlab.audit.catalogue docs/audit.md"
    )
    for code in RULES:
        assert code in catalogue.severity_table(), f"{code} missing from the severity table"


def test_no_rule_count_is_written_by_hand():
    """Neither the page, the audit's --help nor the workshop's `budgetlab --help` counts the rules in words."""
    from typer.testing import CliRunner

    from budgetlab.audit.command import build_parser
    from budgetlab.cli import app

    runner = CliRunner()
    texts = {
        "docs/audit.md": PAGE.read_text(encoding="utf-8").split("## Precision on real code bases")[0],
        "budgetlab-audit --help": build_parser().format_help(),
        "budgetlab --help": runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output,
        "budgetlab audit --help": runner.invoke(app, ["audit", "--help"], env={"COLUMNS": "200"}).output,
    }
    for where, text in texts.items():
        counted = COUNTED.findall(text)
        assert not counted, f"{where} counts by hand: {counted}"
    for code in RULES:
        assert code in texts["budgetlab audit --help"], f"`budgetlab audit --help` does not list {code}"
