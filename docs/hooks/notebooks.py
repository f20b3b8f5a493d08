"""MkDocs hook that lists every docs/notebooks/*.ipynb in the nav and on the notebooks index page.

mkdocs-jupyter renders each notebook as a page; this hook only makes them
findable, so adding a notebook needs no edit to mkdocs.yml and the site still
builds while there is none.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.notebooks")

SRC = Path(__file__).resolve().parents[2] / "src"
INDEX = "notebooks/index.md"
MARKER = "<!-- budgetlab-notebook-list -->"


def notebooks(docs_dir: str | Path) -> list[tuple[str, str]]:
    """Return (title, path relative to docs/) for each notebook, sorted by file name."""
    found = []
    for path in sorted((Path(docs_dir) / "notebooks").glob("*.ipynb")):
        found.append((notebook_title(path), f"notebooks/{path.name}"))
    return found


def notebook_title(path: Path) -> str:
    """Return the notebook's first Markdown heading, or a title made from its file name."""
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError) as exc:
        log.warning("cannot read notebook %s: %s", path, exc)
        cells = []
    for cell in cells:
        if cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        text = "".join(source) if isinstance(source, list) else source
        for line in text.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
    return path.stem.replace("_", " ").replace("-", " ").capitalize()


def on_config(config):
    """Append the notebooks to the nav section that holds notebooks/index.md."""
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab import sitenav

    section = sitenav.section_of(config.nav or [], INDEX)
    if section is None:
        log.warning("mkdocs.yml nav has no section containing %s; notebooks stay out of the nav", INDEX)
        return config
    listed = {sitenav.page_of(item) for item in section}
    for title, path in notebooks(config.docs_dir):
        if path not in listed:
            section.append({title: path})
    return config


def on_page_markdown(markdown, page, config, files):
    """Replace the marker on the notebooks index with a list of links, or a note that none exist yet."""
    if page.file.src_uri != INDEX or MARKER not in markdown:
        return markdown
    found = notebooks(config.docs_dir)
    if not found:
        listing = (
            '!!! note "No notebooks yet"\n'
            "    The notebooks arrive with labs 1 and 5. Each one saved with its outputs\n"
            "    into `docs/notebooks/` appears here and in the navigation.\n"
        )
    else:
        listing = "\n".join(f"- [{title}]({Path(path).name})" for title, path in found) + "\n"
    return markdown.replace(MARKER, listing)
