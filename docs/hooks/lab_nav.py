"""MkDocs hook that writes the labs and the instructor notes into the nav from tests/labs.toml, so no title is typed twice.

mkdocs.yml lists only each section's index page (labs/index.md,
instructors/index.md); the hook appends one entry per lab of the manifest,
titled as every other list of labs on the site titles it
(budgetlab.lab_pages). A lab page that mkdocs.yml names by hand fails the
build: a second title there is how the nav once kept a lab's old name,
which gave its answer away in every page's sidebar.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

SRC = Path(__file__).resolve().parents[2] / "src"
LABS_INDEX = "labs/index.md"
NOTES_INDEX = "instructors/index.md"


def entries(labs) -> dict[str, list[dict[str, str]]]:
    """Return the nav entries to append after each index page: {index: [{title: page}, ...]}."""
    return {LABS_INDEX: [{entry.heading: entry.page} for entry in labs],
            NOTES_INDEX: [{entry.notes_title: entry.notes_page} for entry in labs]}


def on_config(config):
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab import lab_pages, sitenav
    from budgetlab.errors import BudgetlabError

    try:
        labs = lab_pages.load(Path(config.config_file_path).parent)
    except BudgetlabError as exc:
        raise PluginError(f"lab_nav: {exc}") from None
    nav = config.nav or []
    generated = entries(labs)
    by_hand = sorted(sitenav.pages_in(nav) & {page for pages in generated.values() for entry in pages for page in entry.values()})
    if by_hand:
        raise PluginError(f"lab_nav: mkdocs.yml lists {', '.join(by_hand)} by hand; the nav takes every lab from "
                          "tests/labs.toml, so leave only the section's index page there")
    for index, pages in generated.items():
        section = sitenav.section_of(nav, index)
        if section is None:
            raise PluginError(f"lab_nav: mkdocs.yml's nav has no section that holds {index}")
        section.extend(pages)
    return config
