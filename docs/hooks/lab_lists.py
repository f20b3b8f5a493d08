"""MkDocs hook that writes every list of labs on the site from tests/labs.toml, so no page counts or lists labs by hand.

A page writes `<!-- labs: NAME -->` where a list belongs (the count, the home
page's map and diagram, the labs table, the facilitator's agenda, self-paced
plan and discussion questions, the first lab's command); the hook replaces it
with what budgetlab.lab_pages renders from the manifest and the lab pages'
front matter. An unknown marker, or a lab page without its fields, fails the
strict build.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.lab_lists")

SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = re.compile(r"<!-- labs: ([\w-]+) -->")


def _lab_pages():
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab import lab_pages

    return lab_pages


def on_page_markdown(markdown, page, config, files):
    """Replace each `<!-- labs: NAME -->` marker with its list, rendered for this page's place in the site."""
    if not MARKER.search(markdown):
        return markdown
    lab_pages = _lab_pages()
    from budgetlab.errors import BudgetlabError

    try:
        labs = lab_pages.load(Path(config.config_file_path).parent)
    except BudgetlabError as exc:
        log.warning("%s: cannot list the labs: %s", page.file.src_uri, exc)
        return markdown

    def render(match):
        try:
            return lab_pages.render(match.group(1), labs, page.file.src_uri).rstrip("\n")
        except BudgetlabError as exc:
            log.warning("%s", exc)
            return ""

    return MARKER.sub(render, markdown)
