"""The site's nav lists every lab and its notes from tests/labs.toml (docs/hooks/lab_nav.py); mkdocs.yml types no lab title."""

from __future__ import annotations

import copy
import html
import re

import pytest
from docs_support import ROOT, load_module

from budgetlab import lab_pages, sitenav


def _hook():
    return load_module("docs/hooks/lab_nav.py")


@pytest.fixture(scope="module")
def config():
    # MkDocs is imported here, not at the top: the passes on a second Python collect this module without it.
    from mkdocs.config import load_config

    return load_config(str(ROOT / "mkdocs.yml"))


def test_the_nav_lists_every_lab_and_its_notes_as_the_manifest_titles_them(config):
    """After the hook, the Labs section holds each lab's page titled "N · title", in the manifest's order, and so on."""
    config = copy.copy(config)
    config.nav = copy.deepcopy(config.nav)
    _hook().on_config(config)
    labs = lab_pages.load(ROOT)
    labs_section = sitenav.section_of(config.nav, "labs/index.md")
    assert labs_section[1:] == [{entry.heading: entry.page} for entry in labs], labs_section
    notes_section = sitenav.section_of(config.nav, "instructors/index.md")
    assert notes_section[1:] == [{f"Lab {entry.lab.number} notes": entry.notes_page} for entry in labs], notes_section


def test_a_lab_page_named_by_hand_in_mkdocs_yml_stops_the_build(config):
    """A second title typed into mkdocs.yml is how the nav once kept a lab's old, telling name: the hook refuses it."""
    config = copy.copy(config)
    config.nav = copy.deepcopy(config.nav)
    sitenav.section_of(config.nav, "labs/index.md").append({"2 · The signal your loop already caught": "labs/lab2.md"})
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=r"labs/lab2\.md by hand"):
        _hook().on_config(config)


def test_the_built_sidebar_shows_the_manifests_titles(built_site):
    """The labs overview's sidebar links each lab page under its manifest heading, and nothing else."""
    page = (built_site.require() / "labs" / "index.html").read_text(encoding="utf-8")
    links = re.finditer(r'<a href="(?:\.\./)?lab(\d+)/"\s+class="md-nav__link[^"]*"[^>]*>(.*?)</a>', page, re.S)
    shown = {int(link.group(1)): html.unescape(re.sub(r"<[^>]+>", "", link.group(2))).strip() for link in links}
    assert shown == {entry.lab.number: entry.heading for entry in lab_pages.load(ROOT)}, shown
