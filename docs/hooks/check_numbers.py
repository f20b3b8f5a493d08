"""MkDocs hook that writes the code's own numbers into the pages: a tolerance or a clock speed a page states is the code's.

A page writes `<!-- budgetlab-number lab8.TOLERANCE -->` (a constant of
budgetlab.stories.lab8) where the number belongs, with a form after it when
needed (`percent`, `times`, `per-ms`, `ms`; see budgetlab.page_numbers), so
changing a check's allowance or a lab's clock changes its page. A marker
that names no constant fails the build.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

SRC = Path(__file__).resolve().parents[2] / "src"


def on_page_markdown(markdown, page, config, files):
    if "budgetlab-number" not in markdown:
        return markdown
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab import page_numbers
    from budgetlab.errors import BudgetlabError

    try:
        return page_numbers.fill(markdown)
    except BudgetlabError as exc:
        raise PluginError(f"{page.file.src_uri}: {exc}") from None
