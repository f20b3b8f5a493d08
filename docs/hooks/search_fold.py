"""MkDocs hook that keeps every collapsed block (a hint, an answer) out of site search, so a search shows no answer.

A learner who searches "job_mark_failed" should land on the page, not read
lab 2's last hint in the results: the index would show a closed `???` block's
text in full. Material's search plugin skips any element that carries
`data-search-exclude` (material/plugins/search/plugin.py, 9.8.2: lines
351 and 458) and strips that attribute from the page afterwards (line 133),
so the hook marks each `<details>` that renders closed. An open block
(`???+`) is read anyway and stays searchable.
"""

from __future__ import annotations

import re

# A `<details ...>` tag without the `open` attribute, the way pymdownx.details renders `???`.
CLOSED = re.compile(r"<details\b(?![^>]*\bopen\b)")
# The value is only there because the plugin's clean-up removes the attribute only when it has one.
EXCLUDED = '<details data-search-exclude="collapsed"'


def fold(html: str) -> str:
    """Return the page's HTML with every closed block marked for search to skip."""
    return CLOSED.sub(EXCLUDED, html)


def on_page_content(html, page, config, files):
    return fold(html)
