"""Each page renders as written: one title, and a heading only where the source writes `## ` on purpose."""

from __future__ import annotations

import re

import pytest
from docs_support import DOCS

# A line Python-Markdown reads as a heading although nobody wrote one: `#9203 has the details` (no space).
ACCIDENTAL_HEADING = re.compile(r"^ *#{1,6}(?=[^#\s])")
FENCE = re.compile(r"^ *(```|~~~)")


def accidental_headings(markdown: str) -> list[str]:
    """Return every line outside code fences that Markdown would turn into a heading not written as one."""
    found, fence = [], None
    for number, line in enumerate(markdown.splitlines(), start=1):
        opened = FENCE.match(line)
        if opened:
            fence = None if fence == opened.group(1) else (fence or opened.group(1))
            continue
        if fence is None and ACCIDENTAL_HEADING.match(line):
            found.append(f"line {number}: {line.strip()[:70]}")
    return found


def test_the_check_sees_the_stray_heading_lab_6_once_had():
    """The wrapped sentence that made `#9203` a title mid-story is caught; a real heading and code are not."""
    text = "Celery issue\n#9203 has the details\n\n## The story\n\n```bash\n#!/bin/sh\n```\n"
    assert accidental_headings(text) == ["line 2: #9203 has the details"]


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")))
def test_no_line_becomes_a_heading_by_accident(page):
    """No line of a page starts with `#` directly followed by text, which Markdown renders as a heading."""
    found = accidental_headings((DOCS / page).read_text(encoding="utf-8"))
    assert not found, f"{page} has lines Markdown reads as headings: {found}; rewrap them"


def test_every_built_page_has_one_title_and_a_toc_of_its_own_headings(built_site):
    """Each built page has exactly one h1, and each entry of its table of contents links a heading on the page."""
    site = built_site.require()
    problems = []
    pages = [p for p in site.rglob("index.html") if "assets" not in p.parts and "search" not in p.parts]
    assert len(pages) >= 20, f"only {len(pages)} pages built"
    for path in pages:
        text = path.read_text(encoding="utf-8")
        article = re.search(r"<article[^>]*>(.*?)</article>", text, flags=re.DOTALL)
        if not article:
            problems.append(f"{path.relative_to(site)}: no article")
            continue
        titles = re.findall(r"<h1\b", article.group(1))
        if len(titles) != 1:
            problems.append(f"{path.relative_to(site)}: {len(titles)} h1 headings")
        heading_ids = set(re.findall(r'<h[2-6][^>]*\sid="([^"]+)"', article.group(1)))
        toc = re.search(r'<nav class="md-nav md-nav--secondary"[^>]*>(.*?)</nav>\s*</div>', text, flags=re.DOTALL)
        for anchor in re.findall(r'href="#([^"]+)"', toc.group(1) if toc else ""):
            if anchor not in heading_ids:
                problems.append(f"{path.relative_to(site)}: the table of contents links #{anchor}, no h2-h6 heading")
    assert not problems, "\n".join(problems)
