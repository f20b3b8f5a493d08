"""MkDocs hook that writes the checks' own numbers into the pages: a tolerance a page states is the one the checks use.

A page writes `<!-- budgetlab-number lab8.TOLERANCE -->` (a constant of
budgetlab.stories.lab8) where the number belongs, or
`<!-- budgetlab-number lab8.RETRIED_SHARE percent -->` for a share; the
hook replaces the marker with the value, so changing a check's allowance
changes its page.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = re.compile(r"<!-- budgetlab-number (\w+)\.(\w+)( percent)? -->")


def number(story: str, name: str, percent: bool = False) -> str:
    """Return the constant `name` of budgetlab.stories.<story> as a page writes it."""
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    value = getattr(importlib.import_module(f"budgetlab.stories.{story}"), name)
    return f"{value * 100:g} %" if percent else f"{value:g}"


def on_page_markdown(markdown, page, config, files):
    return MARKER.sub(lambda m: number(m.group(1), m.group(2), bool(m.group(3))), markdown)
