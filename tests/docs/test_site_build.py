"""The docs site builds strictly, works offline, and every lab page keeps the shape of a lab."""

from __future__ import annotations

import html
import json
import re
import tomllib

import pytest
from docs_support import DOCS, ROOT, build_site, copy_project

from budgetlab import labs
from budgetlab import labs as manifest

LAB_SECTIONS = ("Questions", "Objectives", "The story", "Tasks", "Hints", "Expected output", "Challenge",
                "Further reading", "After you pass", "Key points")
# Every lab tests/labs.toml declares, so a new lab's page is checked without an edit here.
LAB_NUMBERS = [lab.number for lab in labs.load(ROOT)]
EXTERNAL_ASSET = re.compile(
    r'<(?:script|img|iframe|source|audio|video)\b[^>]*\ssrc="(?:https?:)?//'
    r'|<link\b[^>]*\srel="(?:stylesheet|preload|modulepreload|preconnect|icon)"[^>]*\shref="(?:https?:)?//'
    r'|<link\b[^>]*\shref="(?:https?:)?//[^"]*"[^>]*\srel="(?:stylesheet|preload|modulepreload|preconnect|icon)"'
    r"|url\(\s*['\"]?(?:https?:)?//",
    re.IGNORECASE,
)


def test_site_builds_with_strict_checks(built_site):
    """`mkdocs build --strict` succeeds: every page, link, anchor and snippet resolves."""
    site = built_site.require()
    assert (site / "index.html").is_file(), "the build produced no home page"
    assert "WARNING" not in built_site.log, f"the build logged warnings:\n{built_site.log}"


def test_built_site_fetches_nothing_from_the_internet(built_site):
    """No built page or stylesheet loads a script, style, font or image from another host."""
    site = built_site.require()
    offenders = []
    for path in [*site.rglob("*.html"), *site.rglob("*.css")]:
        match = EXTERNAL_ASSET.search(path.read_text(encoding="utf-8", errors="replace"))
        if match:
            offenders.append(f"{path.relative_to(site)}: {match.group(0)[:120]}")
    assert not offenders, "pages that would need the internet:\n" + "\n".join(offenders)


def test_mermaid_is_served_from_the_site(built_site):
    """The vendored Mermaid copy is part of the site and every page loads it, so Material never asks a CDN."""
    site = built_site.require()
    assert (site / "assets/vendor/mermaid/mermaid.min.js").stat().st_size > 100_000, "mermaid.min.js is missing or truncated"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'src="assets/vendor/mermaid/mermaid.min.js"' in home, "the home page does not load the local Mermaid"


def test_broken_anchor_fails_the_strict_build(tmp_path):
    """A link to an anchor that does not exist stops the build instead of shipping a dead link."""
    config = copy_project(tmp_path)
    page = tmp_path / "docs" / "troubleshooting.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](labs/lab1.md#no-such-section).\n", encoding="utf-8")
    result = build_site(config, tmp_path / "site")
    assert result.returncode != 0, "a broken anchor passed the strict build"
    assert "no-such-section" in result.log, f"the build failed for another reason:\n{result.log[-3000:]}"


@pytest.mark.parametrize("number", LAB_NUMBERS)
def test_lab_page_has_every_section_of_a_lab(number):
    """Each lab page has every section of a lab, numbered tasks, and its answers last, after the challenge."""
    text = (DOCS / "labs" / f"lab{number}.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (.+?)\s*(?:\{.*\})?$", text, flags=re.MULTILINE)
    missing = [section for section in LAB_SECTIONS if section not in headings]
    assert not missing, f"lab{number}.md lacks the sections {missing}"
    assert 'class="timebox"' in text, f"lab{number}.md shows no timebox"
    for command in ("run", "check", "hint"):
        assert f"budgetlab {command} {number}" in text, f"lab{number}.md never mentions `budgetlab {command} {number}`"
    tasks = re.search(r"^## Tasks\n(.*?)^## ", text, flags=re.MULTILINE | re.DOTALL)
    assert tasks and re.search(r"^1\. ", tasks.group(1), flags=re.MULTILINE), f"lab{number}.md has no numbered tasks"
    assert headings[:2] == ["Questions", "Objectives"], f"lab{number}.md should open with Questions and Objectives"
    assert headings.index("Tasks") < headings.index("Challenge") < headings.index("After you pass"), (
        f"lab{number}.md's answers belong in `## After you pass`, after the tasks and the challenge")
    assert headings[-1] == "Key points" and headings.index("After you pass") == len(headings) - 2, (
        f"lab{number}.md should end with `## After you pass` and `## Key points`, with nothing after them")
    assert "](../glossary.md)" in text, f"lab{number}.md does not link the glossary"
    after = text[text.index("\n## After you pass\n"):]
    assert '??? success "Challenge' in after, (
        f"lab{number}.md's challenge has no collapsed model answer (`??? success \"Challenge, answer: …\"`) "
        "under `## After you pass`")


@pytest.mark.parametrize("number", LAB_NUMBERS)
def test_lab_page_shows_the_hints_of_labs_toml_collapsed_in_order(built_site, number):
    """The hints on a lab page are labs.toml's, in `budgetlab hint N` order, each in a block closed until opened."""
    lab = next(entry for entry in load_labs() if entry["number"] == number)
    page = (built_site.require() / "labs" / f"lab{number}" / "index.html").read_text(encoding="utf-8")
    blocks = re.findall(r'<details class="tip">\s*<summary>(.*?)</summary>(.*?)</details>', page, flags=re.DOTALL)
    texts = [" ".join(html.unescape(re.sub(r"<[^>]+>", "", body)).split()) for _, body in blocks]
    assert texts == [" ".join(hint.split()) for hint in lab["hints"]], (
        f"lab {number}'s page shows other hints than tests/labs.toml:\n{texts}"
    )
    titles = [re.sub(r"<[^>]+>", "", title) for title, _ in blocks]
    assert all(title.startswith(f"Hint {index} of {len(blocks)}") for index, title in enumerate(titles, 1)), titles


def load_labs() -> list[dict]:
    """Return the [[lab]] tables of tests/labs.toml, the one place that defines the labs."""
    path = manifest.metadata_file(ROOT)
    if not path.exists():
        pytest.skip("tests/labs.toml does not exist yet")
    return tomllib.loads(path.read_text(encoding="utf-8"))["lab"]


def test_lab_pages_agree_with_labs_toml():
    """Each lab page shows the title, timebox, directory and files that tests/labs.toml gives its lab."""
    for lab in load_labs():
        number, title = lab["number"], lab["title"]
        text = (DOCS / "labs" / f"lab{number}.md").read_text(encoding="utf-8")
        assert re.search(rf"^# Lab {number} · {re.escape(title)}$", text, flags=re.MULTILINE), (
            f"lab{number}.md's title differs from labs.toml: {title!r}"
        )
        assert f"{lab['timebox']} min</span>" in text, f"lab{number}.md's timebox differs from labs.toml ({lab['timebox']} min)"
        assert f"labs/{lab['slug']}/" in text, f"lab{number}.md does not name its directory labs/{lab['slug']}/"
        missing = [name for name in lab["files"] if name not in text]
        assert not missing, f"lab{number}.md never mentions the files to edit: {missing}"


@pytest.mark.parametrize("page", ["index.html", "labs/index.html"])
def test_lab_tables_agree_with_labs_toml(built_site, page):
    """The lab tables on the built home page and labs overview have one row per lab of labs.toml, with its timebox."""
    text = (built_site.require() / page).read_text(encoding="utf-8")
    rows = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split())
            for row in re.findall(r"<tr>(.*?)</tr>", text, flags=re.DOTALL)]
    labs = load_labs()
    lab_rows = [row for row in rows if re.match(r"\d+ · ", row)]
    assert len(lab_rows) == len(labs), f"{page}: {len(lab_rows)} lab rows for {len(labs)} labs:\n" + "\n".join(rows)
    for lab, row in zip(labs, lab_rows):
        assert row.startswith(f"{lab['number']} · {lab['title']} "), f"{page}: lab {lab['number']}'s row is {row!r}"
        assert f" {lab['timebox']} min" in row, f"{page}: lab {lab['number']}'s timebox differs from labs.toml"


def test_notebooks_are_never_executed_at_build_time():
    """mkdocs-jupyter renders saved outputs only; a build must not need a kernel, a database or the network."""
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    jupyter = config.plugins["mkdocs-jupyter"].config
    assert jupyter["execute"] is False, "mkdocs-jupyter would execute notebooks at build time"


def test_a_notebook_in_docs_notebooks_becomes_a_page_with_its_plot(tmp_path):
    """A notebook saved into docs/notebooks/ is rendered with its image output and listed in nav and index."""
    config = copy_project(tmp_path)
    notebook = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Scan rate over time\n"]},
            {
                "cell_type": "code",
                "execution_count": 1,
                "metadata": {},
                # Executing this cell would fail the build: proof the notebook is only rendered.
                "source": ["raise SystemExit('notebooks must not run at build time')"],
                "outputs": [
                    {
                        "output_type": "display_data",
                        "metadata": {},
                        "data": {"image/png": _ONE_PIXEL_PNG, "text/plain": ["<Figure>"]},
                    }
                ],
            },
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (tmp_path / "docs" / "notebooks" / "scan_rate.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    result = build_site(config, tmp_path / "site")
    site = result.require()
    page = (site / "notebooks" / "scan_rate" / "index.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page, "the notebook page lost its plot"
    assert "notebooks must not run" in page, "the notebook's code is not shown"
    index = (site / "notebooks" / "index.html").read_text(encoding="utf-8")
    assert 'href="scan_rate/"' in index, "the notebooks index does not list the new notebook"
    assert "Scan rate over time" in index, "the notebook's title is not used in the nav or the index"


_ONE_PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def test_a_page_states_the_checks_own_numbers(built_site):
    """A number a page takes from a check (a `budgetlab-number` marker) shows the check's constant; no marker is left."""
    site = built_site.require()
    from budgetlab.stories import lab8

    pages = {path: path.read_text(encoding="utf-8") for path in site.rglob("*.html")}
    assert not [p for p, text in pages.items() if "budgetlab-number" in text], "a marker survived the build"
    lab8_page = re.sub(r"\s+", " ", html.unescape(pages[site / "labs" / "lab8" / "index.html"]))
    assert f"allow {lab8.TOLERANCE:g} production seconds past the promise" in lab8_page
