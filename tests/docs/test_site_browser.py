"""The built site works in a real browser with no internet: pages, search, diagrams, notebooks, dark mode."""

from __future__ import annotations

import re

import pytest
from conftest import OPEN_SHADOW_ROOTS, probed_page
from docs_support import DOCS, ROOT, SCREENSHOTS

from budgetlab import labs

pytestmark = pytest.mark.browser

# Every lab labs/labs.toml declares, so a new lab's page is opened without an edit here.
LAB_NUMBERS = [lab.number for lab in labs.load(ROOT)]
LAB_PAGES = [f"labs/lab{number}/" for number in LAB_NUMBERS]
# The pages that draw Mermaid diagrams, with how many each one draws.
DIAGRAM_PAGES = {
    "": 1,
    "labs/lab2/": 1,
    "labs/lab3/": 1,
    "labs/lab4/": 1,
    "labs/lab5/": 1,
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


@pytest.mark.parametrize("path", ["", *LAB_PAGES], ids=["home", *[f"lab{n}" for n in LAB_NUMBERS]])
def test_page_loads_without_console_errors(probe, site_url, path):
    """The home page and every lab page load with no console error and no request leaving localhost."""
    page = open_page(probe, site_url, path)
    assert page.locator("h1").first.is_visible(), f"/{path} shows no title"
    assert_clean(probe, path)


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


# The two screens every page must read on: a laptop and a phone.
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SMALLEST_LABEL_PX = 11
NARROWEST_COLUMN_PX = {"desktop": 120, "phone": 80}

# Measures one loaded page in the browser; Mermaid hosts have open shadow roots (see conftest).
MEASURE = """
() => {
  const article = document.querySelector("article.md-content__inner") || document.body;
  const labels = [];
  const diagrams = [];
  for (const host of article.querySelectorAll("div.mermaid")) {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    if (!svg) { labels.push({text: "(a diagram that did not render)", px: 0}); continue; }
    diagrams.push({text: (svg.textContent || "").trim().slice(0, 40), drawn: svg.getBoundingClientRect().width,
                   column: host.clientWidth});
    const viewBox = svg.viewBox && svg.viewBox.baseVal;
    const scale = viewBox && viewBox.width ? svg.getBoundingClientRect().width / viewBox.width : 1;
    for (const node of svg.querySelectorAll("text, tspan, foreignObject span, foreignObject p, foreignObject div")) {
      const text = (node.textContent || "").trim();
      if (!text || node.getBoundingClientRect().width === 0) continue;
      labels.push({text: text.slice(0, 40), px: parseFloat(getComputedStyle(node).fontSize) * scale});
    }
  }
  const columns = [];
  for (const table of article.querySelectorAll("table")) {
    if (table.closest(".jp-OutputArea, .jupyter-wrapper")) continue;
    const row = table.querySelector("tr");
    if (!row) continue;
    for (const cell of row.children) {
      columns.push({text: (cell.textContent || "").trim().slice(0, 40), px: cell.getBoundingClientRect().width});
    }
  }
  const consoles = [];
  for (const code of article.querySelectorAll(".language-console pre > code")) {
    if (code.closest("details:not([open])")) continue;
    consoles.push({text: (code.textContent || "").trim().slice(0, 60), content: code.scrollWidth, block: code.clientWidth});
  }
  const openAnswers = [...article.querySelectorAll("details[open]")].map(
    (block) => (block.querySelector("summary") || block).textContent.trim().slice(0, 60));
  const nav = [...document.querySelectorAll("nav.md-nav--primary a")].map((link) => link.textContent.trim());
  return {labels, diagrams, columns, consoles, openAnswers, nav};
}
"""


def site_pages(site) -> list[str]:
    """Return the path of every page of the built site, relative to its root."""
    return sorted("" if page.parent == site else f"{page.parent.relative_to(site).as_posix()}/"
                  for page in site.rglob("index.html")
                  if "assets" not in page.parts and "search" not in page.parts)


def wait_for_diagrams(page):
    """Wait until Material has turned every Mermaid source block into a drawing."""
    page.wait_for_function(
        "document.querySelectorAll('pre.mermaid').length === 0 && [...document.querySelectorAll('div.mermaid')]"
        ".every((host) => host.shadowRoot && host.shadowRoot.querySelector('svg'))",
        timeout=15_000,
    )


@pytest.mark.slow
@pytest.mark.parametrize("screen", VIEWPORTS)
def test_every_page_reads_on_a_laptop_and_a_phone(chromium_browser, site_url, built_site, screen):
    """On every page: diagram labels of 11 px or more (and diagrams that fit a laptop's column), no crushed table
    column, no console line cut off, every answer block closed on load, the instructor section in the nav;
    a full-page screenshot of each in .budgetlab/shots/."""
    shots = SCREENSHOTS / screen
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    pages = site_pages(built_site.require())
    assert len(pages) >= 20, f"only {len(pages)} pages found in the built site"
    with probed_page(chromium_browser, (site_url,), OPEN_SHADOW_ROOTS, viewport=VIEWPORTS[screen]) as probe:
        for path in pages:
            # "load" and not "networkidle": the site fetches nothing late but its diagrams, waited for below.
            probe.page.goto(site_url + path, wait_until="load")
            wait_for_diagrams(probe.page)
            found = probe.page.evaluate(MEASURE)
            where = f"/{path} at {screen} width"
            problems += [f"{where}: diagram label {label['text']!r} drawn at {label['px']:.1f} px"
                         for label in found["labels"] if label["px"] < SMALLEST_LABEL_PX]
            problems += [f"{where}: table column {column['text']!r} only {column['px']:.0f} px wide"
                         for column in found["columns"] if column["px"] < NARROWEST_COLUMN_PX[screen]]
            if screen == "desktop":
                # On a laptop a diagram fits its column; on a phone it may scroll sideways instead of shrinking.
                problems += [f"{where}: diagram {diagram['text']!r} is {diagram['drawn']:.0f} px wide in a "
                             f"{diagram['column']} px column" for diagram in found["diagrams"]
                             if diagram["drawn"] > diagram["column"] + 1]
            if screen == "desktop" and path.startswith("labs/lab"):
                problems += [f"{where}: console block {block['text']!r} is {block['content']} px wide in a "
                             f"{block['block']} px block" for block in found["consoles"]
                             if block["content"] > block["block"] + 1]
            problems += [f"{where}: the block {title!r} is open on load" for title in found["openAnswers"]]
            if not any("Instructor notes" in entry for entry in found["nav"]):
                problems.append(f"{where}: the navigation does not show the instructor notes")
            problems += [f"{where}: console error {error}" for error in probe.console_errors]
            problems += [f"{where}: fetched {url}" for url in probe.external_requests]
            probe.console_errors.clear()
            probe.external_requests.clear()
            name = path.strip("/").replace("/", "-") or "home"
            probe.page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
    assert not problems, f"{len(problems)} problem(s) at {screen} width:\n" + "\n".join(problems)


def test_cheat_sheet_prints_on_one_page(probe, site_url):
    """Printed from the browser, the cheat sheet fits one A4 page, with the commands and the three things on it."""
    page = open_page(probe, site_url, "cheatsheet/")
    pdf = page.pdf(format="A4", prefer_css_page_size=True)
    pages = len(re.findall(rb"/Type\s*/Page\b", pdf))
    assert pages == 1, f"the printed cheat sheet takes {pages} pages"
    page.emulate_media(media="print")
    assert not page.locator(".md-header").is_visible(), "the site's header is printed on the cheat sheet"
    text = page.locator("article").inner_text()
    for needed in ("budgetlab check N", "budgetlab hint N", "A budget someone chose", "Where to look"):
        assert needed in text, f"the cheat sheet lacks {needed!r}"
    assert_clean(probe, "cheatsheet/")
