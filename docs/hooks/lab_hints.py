"""MkDocs hook that renders each lab's hints from tests/labs.toml as collapsed blocks, so the page and `budgetlab hint N` share one source.

A lab page writes `<!-- budgetlab-hints N -->` where its hints belong; the
hook replaces the marker with one closed `??? tip` block per hint, in the
order `budgetlab hint N` reveals them. A marker for a lab that labs.toml does
not define fails the strict build.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.lab_hints")

SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = re.compile(r"^<!-- budgetlab-hints (\d+) -->$", re.MULTILINE)
# Characters Markdown would read as markup inside a hint's plain text.
MARKUP = re.compile(r"([\\`*_\[\]<>#|])")


def _labs(config):
    """Return {number: Lab} from the tests/labs.toml next to this site's mkdocs.yml."""
    if SRC.is_dir() and str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    from budgetlab import labs

    return {lab.number: lab for lab in labs.load(Path(config.config_file_path).parent)}


def hint_blocks(hints: tuple[str, ...]) -> str:
    """Return Markdown for one collapsed block per hint, titled with its place in the sequence."""
    blocks = []
    for index, hint in enumerate(hints, start=1):
        title = f"Hint {index} of {len(hints)}" + (": the nearest to the answer" if index == len(hints) else "")
        text = MARKUP.sub(r"\\\1", hint)
        blocks.append(f'??? tip "{title}"\n\n    {text}\n')
    return "\n".join(blocks)


def on_page_markdown(markdown, page, config, files):
    """Replace each hints marker with the lab's hints from tests/labs.toml."""
    if not MARKER.search(markdown):
        return markdown
    labs = _labs(config)

    def render(match):
        number = int(match.group(1))
        if number not in labs:
            log.warning("%s asks for the hints of lab %d, which tests/labs.toml does not define",
                        page.file.src_uri, number)
            return ""
        return hint_blocks(labs[number].hints)

    return MARKER.sub(render, markdown)
