"""The built site works in a real browser with no internet: pages, search, diagrams, notebooks, dark mode."""

from __future__ import annotations

import pytest
from docs_support import DOCS, SCREENSHOTS

pytestmark = pytest.mark.browser

LAB_PAGES = [f"labs/lab{number}/" for number in range(1, 6)]
# The pages that draw Mermaid diagrams, with how many each one draws.
DIAGRAM_PAGES = {
    "": 1,
    "concepts/time-limits/": 2,
    "concepts/soft-and-hard/": 2,
    "concepts/statistics-snapshots/": 1,
}


def open_page(probe, site_url, path):
    probe.page.goto(site_url + path, wait_until="networkidle")
    return probe.page


def assert_clean(probe, path):
    assert not probe.console_errors, f"/{path} logged errors in the console: {probe.console_errors}"
    assert not probe.external_requests, f"/{path} tried to reach the internet: {probe.external_requests}"


@pytest.mark.parametrize("path", ["", *LAB_PAGES], ids=["home", *[f"lab{n}" for n in range(1, 6)]])
def test_page_loads_without_console_errors(probe, site_url, path):
    """The home page and every lab page load with no console error and no request leaving localhost."""
    page = open_page(probe, site_url, path)
    assert page.locator("h1").first.is_visible(), f"/{path} shows no title"
    assert_clean(probe, path)
    if path in ("", "labs/lab2/"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        name = "home" if path == "" else "lab2"
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def test_search_for_soft_time_limit_exceeded_finds_lab_2(probe, site_url):
    """Typing the exception's name into the search box offers lab 2 among the results."""
    page = open_page(probe, site_url, "")
    page.locator("input.md-search__input").click()
    # Material searches on key events; fill() sets the value without any.
    page.keyboard.type("SoftTimeLimitExceeded", delay=10)
    results = page.locator(".md-search-result__item a")
    results.first.wait_for(timeout=15_000)
    links = results.evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert any("labs/lab2/" in link for link in links), f"search results do not include lab 2: {links}"
    assert_clean(probe, "search")


@pytest.mark.parametrize("path, count", DIAGRAM_PAGES.items(), ids=[p.strip("/") or "home" for p in DIAGRAM_PAGES])
def test_mermaid_diagrams_render_as_svg(probe, site_url, path, count):
    """Every Mermaid block on a page becomes an SVG drawing, with the local Mermaid and no parse error."""
    page = open_page(probe, site_url, path)
    diagrams = page.locator("div.mermaid svg")
    diagrams.nth(count - 1).wait_for(timeout=15_000)
    assert diagrams.count() == count, f"/{path}: expected {count} diagrams, found {diagrams.count()}"
    for index in range(count):
        svg = diagrams.nth(index)
        text = svg.text_content() or ""
        assert "Syntax error" not in text, f"/{path}: diagram {index + 1} failed to parse"
        box = svg.bounding_box()
        assert box and box["width"] > 50 and box["height"] > 20, f"/{path}: diagram {index + 1} is drawn empty"
    assert page.locator("pre.mermaid").count() == 0, f"/{path}: a diagram was left as source text"
    assert_clean(probe, path)


def test_notebook_page_shows_its_plot(probe, site_url):
    """A notebook page shows the plot saved in the notebook."""
    notebooks = sorted((DOCS / "notebooks").glob("*.ipynb"))
    if not notebooks:
        pytest.skip("no notebook in docs/notebooks/ yet; labs 1 and 5 add theirs later")
    path = f"notebooks/{notebooks[0].stem}/"
    page = open_page(probe, site_url, path)
    plots = page.locator(".jp-OutputArea-output img, .jp-OutputArea-output svg")
    plots.first.wait_for(timeout=15_000)
    loaded = plots.first.evaluate("node => node.tagName.toLowerCase() === 'svg' || node.naturalWidth > 0")
    assert loaded, f"/{path}: the plot is there but did not load"
    assert_clean(probe, path)


def test_dark_mode_toggle_switches_the_palette(probe, site_url):
    """Clicking the palette toggle switches to the dark scheme and back, and the background follows."""
    page = open_page(probe, site_url, "")

    def scheme():
        return page.locator("body").get_attribute("data-md-color-scheme")

    def background():
        return page.evaluate("getComputedStyle(document.body).backgroundColor")

    assert scheme() == "default", "a light-mode browser should start on the light palette"
    light = background()
    page.locator("label.md-header__button[for^='__palette']:visible").click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'slate'")
    assert background() != light, "the scheme changed but the page did not turn dark"
    page.locator("label.md-header__button[for^='__palette']:visible").click()
    page.wait_for_function("document.body.getAttribute('data-md-color-scheme') === 'default'")
    assert_clean(probe, "")
