"""What a page says `celery inspect` or the worker's banner shows matches what the suite recorded, or cites the pinned source.

A page that says "`inspect registered` shows 45 s" is checked against the
inspect lines the recorded transcripts (docs/transcripts/) contain: each time
it names must appear in a recorded line of that command, unless the same
paragraph cites the pinned library source (`celery/….py` line N). The worker's
banner lists task names only (Celery 5.6.3, celery/apps/worker.py lines 198-202),
so a page that says it shows a limit is wrong.
"""

from __future__ import annotations

import re

import pytest
from docs_support import DOCS

COMMANDS = ("stats", "registered", "conf")
# "`celery inspect stats` still reports 120 s", "`inspect registered` ... show 45 s".
CLAIM = re.compile(r"inspect (stats|registered|conf)`?(?:[^.;]*?)\b(?:shows?|reports?|says|lists?)\b([^.;]*)",
                   re.IGNORECASE)
SECONDS = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?) ?s\b")
BANNER = re.compile(r"banner\b(?! lists (?:the )?task names)[^.;]*\b(?:shows?|lists?|reports?)\b[^.;]*\d+ ?s\b", re.IGNORECASE)
# A citation of a pinned library file and line, as the pages write them.
CITATION = re.compile(r"`(?:celery|kombu|billiard|openai|django|psycopg)/[\w/]+\.py`[^.]*?\blines? \d+")


def recorded_inspect_lines() -> dict[str, list[str]]:
    """Return, per inspect command, every line of a recorded transcript that shows its output."""
    found: dict[str, list[str]] = {command: [] for command in COMMANDS}
    for transcript in sorted((DOCS / "transcripts").glob("*.txt")):
        for line in transcript.read_text(encoding="utf-8").splitlines():
            for command in COMMANDS:
                if f"inspect {command}" in line:
                    found[command].append(line)
    return found


def paragraphs(text: str) -> list[str]:
    """Return a page's paragraphs, each joined onto one line (list items and blocks stay whole paragraphs)."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def unsupported_claims(text: str, recorded: dict[str, list[str]]) -> list[str]:
    """Return each claim about inspect output or the banner in `text` that nothing recorded or cited backs."""
    problems = []
    for paragraph in paragraphs(text):
        if BANNER.search(paragraph):
            problems.append(f"the banner lists task names only, yet: {BANNER.search(paragraph).group(0)!r}")
        if CITATION.search(paragraph):
            continue
        for match in CLAIM.finditer(paragraph):
            command, said = match.group(1).lower(), match.group(2)
            for seconds in SECONDS.findall(said):
                number = re.compile(rf"(?<![\d.]){re.escape(seconds)}(?![\d.])")
                if not any(number.search(line) for line in recorded[command]):
                    problems.append(f"says `inspect {command}` shows {seconds} s, which no recorded "
                                    f"`inspect {command}` line contains: {match.group(0)!r}")
    return problems


def test_the_check_catches_the_claims_issue_27_found():
    """The sentences that once stood in lab 6 and on the pools page fail the check; a true one passes."""
    recorded = recorded_inspect_lines()
    assert recorded["registered"] and recorded["stats"], "no recorded inspect output: the check would prove nothing"
    wrong = ("Nothing says so: the worker's banner, `inspect stats` and `inspect registered` still show 45 s "
             "for the assistant.")
    assert unsupported_claims(wrong, recorded), "a claim that the banner shows 45 s passed"
    assert unsupported_claims("`inspect stats` reports 45 s for the assistant.", recorded)
    assert unsupported_claims("`inspect registered` shows 47 s.", recorded)
    true = "`inspect registered soft_time_limit time_limit` shows the decorator's 45 s."
    assert not unsupported_claims(true, recorded), unsupported_claims(true, recorded)


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")))
def test_inspect_claims_match_what_the_suite_recorded(page):
    """Every time a page says `inspect` shows is in a recorded inspect line, or its paragraph cites the source."""
    problems = unsupported_claims((DOCS / page).read_text(encoding="utf-8"), recorded_inspect_lines())
    assert not problems, f"{page}:\n" + "\n".join(problems)
