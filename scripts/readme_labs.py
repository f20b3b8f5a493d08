"""Write README.md's lab count, lab table, `make workshop` transcript and code numbers (`make readme`).

README.md is read on GitHub, where no docs hook runs, so its lists are written
into the file between `<!-- labs: NAME -->` and `<!-- /labs -->` markers by
budgetlab.lab_pages, the same renderer the docs site uses; a number the code
sets (the lab clock's speed) sits between `<!-- number: NAME -->` and
`<!-- /number -->`, written by budgetlab.page_numbers. `--check` changes
nothing and exits 1 when README.md is stale (the suite runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from budgetlab import lab_pages, page_numbers  # noqa: E402
from budgetlab.errors import BudgetlabError  # noqa: E402

BLOCK = re.compile(r"(<!-- labs: ([\w-]+) -->)(.*?)(<!-- /labs -->)", re.DOTALL)
# A number the code sets, e.g. `<!-- number: inworker.clock.DEFAULT_FACTOR times -->200<!-- /number -->`
# (budgetlab.page_numbers): the README shows the value between the marks, as GitHub renders it.
NUMBER = re.compile(rf"(<!-- number: {page_numbers.NAME} -->)(.*?)(<!-- /number -->)")


def regenerate(text: str, labs: list) -> str:
    """Return README text with every marked block rendered again; a block on its own lines stays on its own lines."""
    def render(match):
        opening, name, body, closing = match.groups()
        rendered = lab_pages.render(name, labs, "README.md")
        if body.startswith("\n"):
            return f"{opening}\n{rendered.rstrip(chr(10))}\n{closing}"
        return f"{opening}{rendered.strip()}{closing}"

    def number(match):
        opening, path, name, form, _, closing = match.groups()
        return f"{opening}{page_numbers.reference(path, name, form)}{closing}"

    return NUMBER.sub(number, BLOCK.sub(render, text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when README.md is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    readme = args.root / "README.md"
    try:
        labs = lab_pages.load(args.root)
        text = readme.read_text(encoding="utf-8")
        new = regenerate(text, labs)
    except (BudgetlabError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not BLOCK.search(text):
        print(f"error: {readme} has no <!-- labs: NAME --> block", file=sys.stderr)
        return 2
    if new == text:
        return 0
    if args.check:
        print(f"{readme} is stale against tests/labs.toml or the code's numbers; run `make readme`", file=sys.stderr)
        return 1
    readme.write_text(new, encoding="utf-8")
    print(f"wrote {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
