"""The first hour has no wrong turn: every page says how to put `budgetlab` on the PATH, and the home page shows the first lab."""

from __future__ import annotations

import html
import re
import subprocess
import sys

from docs_support import ROOT
from test_spoilers import visible_text

from budgetlab import lab_pages

COMMAND = re.compile(r"\bbudgetlab (?:list|run|check|hint|watch|reset|solution|report|doctor|audit|stack|join|"
                     r"leave|facilitate)\b")
ACTIVATE = "source .venv/bin/activate"


def article_text(page) -> str:
    match = re.search(r"<article\b.*?</article>", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", match.group(0) if match else "")).split())


def test_every_page_says_how_to_put_budgetlab_on_the_path_once_before_its_first_command(built_site):
    """A page that shows a `budgetlab` command says `source .venv/bin/activate` before the first one, and once."""
    site = built_site.require()
    problems, checked = [], 0
    for page in sorted(site.rglob("index.html")):
        if "assets" in page.parts or "search" in page.parts:
            continue
        text = article_text(page)
        first = COMMAND.search(text)
        if not first:
            continue
        checked += 1
        where = page.relative_to(site).parent.as_posix() or "home"
        said = text.find(ACTIVATE)
        if said < 0 or said > first.start():
            problems.append(f"{where}: `{first.group(0)}` comes before any `{ACTIVATE}`")
        notes = text.count("on your PATH The commands on this page")
        if notes > 1:
            problems.append(f"{where}: the PATH note is there {notes} times")
    assert checked >= 15, f"only {checked} pages show a command: the check proves little"
    assert not problems, "\n".join(problems)


def test_the_home_page_shows_the_learners_first_lab_apart_from_the_maintainers_suite(built_site):
    """The home page's first commands are make workshop, the PATH and the manifest's first lab; make test is apart."""
    text = visible_text((built_site.require() / "index.html").read_text(encoding="utf-8"))
    first = lab_pages.first_lab(lab_pages.load())
    learner = text.find(f"make workshop source .venv/bin/activate budgetlab run {first}")
    assert learner >= 0, f"the home page does not show make workshop, the PATH and `budgetlab run {first}` together"
    maintainer = text.find("make test")
    assert maintainer > learner, "`make test` is offered before, or among, the learner's commands"


def test_make_workshop_ends_with_the_path_and_the_first_lab():
    """`make workshop`'s last lines say how to put budgetlab on the PATH and which command starts the first lab."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^workshop:.*?\n((?:\t.*\n)+)", makefile, flags=re.MULTILINE).group(1)
    assert recipe.strip().splitlines()[-1].strip() == "@$(BIN)/python -m budgetlab.lab_pages", recipe
    shown = subprocess.run([sys.executable, "-m", "budgetlab.lab_pages"], capture_output=True, text=True, check=True,
                           cwd=ROOT).stdout
    first = lab_pages.first_lab(lab_pages.load())
    assert ACTIVATE in shown and f"budgetlab run {first}" in shown, shown
