"""MkDocs hook that lists, on the lab-clock page, what stays on wall time, from the one registry the checks' notes use.

The page writes `<!-- budgetlab-wall-seams -->` where the list belongs; the
hook replaces it with budgetlab.inworker.seams' list, so the page and the
note a failed check adds ("uploads.py:83 reads ..., which runs on the
database's wall clock here") never disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = "<!-- budgetlab-wall-seams -->"


def on_page_markdown(markdown, page, config, files):
    if MARKER not in markdown:
        return markdown
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab.inworker import seams

    return markdown.replace(MARKER, seams.page_list().rstrip("\n"))
