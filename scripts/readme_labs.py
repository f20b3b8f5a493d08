"""Write README.md's lab count, lab table, transcripts and code numbers (`make readme`).

README.md is read on GitHub, where no docs hook runs, so its lists are written
into the file between `<!-- labs: NAME -->` and `<!-- /labs -->` markers by
budgetlab.lab_pages, the same renderer the docs site uses; a number the code
sets (the lab clock's speed) sits between `<!-- number: NAME -->` and
`<!-- /number -->`, written by budgetlab.page_numbers; the head of a recorded
transcript sits between `<!-- transcript: NAME LINES -->` and
`<!-- /transcript -->` (its first LINES lines and its verdict line, from
docs/transcripts/NAME.txt). `--check` changes
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


# The head of a recorded transcript, e.g. `<!-- transcript: lab1-check-starter 3 -->`, then a console block.
TRANSCRIPT = re.compile(r"(<!-- transcript: ([\w-]+) (\d+) -->\n)(.*?)(<!-- /transcript -->)", re.DOTALL)
# A check's last word: how many of its checks passed.
VERDICT = re.compile(r"^\d+ of \d+ hidden checks passed$", re.MULTILINE)


def transcript_head(root: Path, name: str, lines: int) -> str:
    """The console block of a recorded transcript's first `lines` lines, cut short, and its verdict line."""
    text = (root / "docs" / "transcripts" / f"{name}.txt").read_text(encoding="utf-8")
    head = text.splitlines()[:lines]
    verdict = VERDICT.search(text)
    shown = [line.replace("$ budgetlab ", "$ .venv/bin/budgetlab ", 1) for line in head]
    return "```console\n" + "\n".join([*shown, "  …", *([verdict.group(0)] if verdict else [])]) + "\n```\n"


def regenerate(text: str, labs: list, root: Path = ROOT) -> str:
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

    def transcript(match):
        opening, name, lines, _, closing = match.groups()
        return f"{opening}{transcript_head(root, name, int(lines))}{closing}"

    return TRANSCRIPT.sub(transcript, NUMBER.sub(number, BLOCK.sub(render, text)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when README.md is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    args = parser.parse_args(argv)
    readme = args.root / "README.md"
    try:
        labs = lab_pages.load(args.root)
        text = readme.read_text(encoding="utf-8")
        new = regenerate(text, labs, args.root)
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
