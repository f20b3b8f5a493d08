"""The built site works in a real browser with no internet: pages, search, diagrams, notebooks, dark mode."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import OPEN_SHADOW_ROOTS, probed_page
from docs_support import DOCS, ROOT, SCREENSHOTS, SHOTS_WANTED

from budgetlab import labs

pytestmark = pytest.mark.browser

# Every lab page, from the manifest: a lab added to tests/labs.toml is tested without an edit here.
LABS = labs.load(ROOT)
LAB_PAGES = [f"{Path(lab.page).relative_to('docs').with_suffix('').as_posix()}/" for lab in LABS]


def open_page(probe, site_url, path):
    probe.page.goto(site_url + path, wait_until="networkidle")
    return probe.page


def assert_clean(probe, path):
    assert not probe.console_errors, f"/{path} logged errors in the console: {probe.console_errors}"
    assert not probe.external_requests, f"/{path} tried to reach the internet: {probe.external_requests}"


@pytest.mark.parametrize("path", ["", *LAB_PAGES], ids=["home", *[f"lab{lab.number}" for lab in LABS]])
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


def diagram_pages(site) -> dict[str, int]:
    """Return {page path: number of Mermaid blocks} for every built page that draws a diagram."""
    found = {}
    for path in site_pages(site):
        count = (site / path / "index.html").read_text(encoding="utf-8").count('<pre class="mermaid">')
        if count:
            found[path] = count
    return found


def test_mermaid_diagrams_render_as_svg(probe, site_url, built_site):
    """Every Mermaid block on every page becomes an SVG drawing, with the local Mermaid and no parse error."""
    pages = diagram_pages(built_site.require())
    assert "" in pages and any(path in pages for path in LAB_PAGES), f"too few pages draw diagrams: {pages}"
    for path, count in pages.items():
        page = open_page(probe, site_url, path)
        # A diagram may sit in a collapsed block (the answers under "After you pass"): open them all to see it.
        page.evaluate("document.querySelectorAll('details').forEach(block => { block.open = true; })")
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
# Pages a learner reads while working: on a laptop every line of their code blocks is whole, never behind a
# sideways scroll (the maintainers', facilitators' and audit pages may scroll a long command).
WHOLE_LINES = ("labs/lab", "getting-started", "concepts/")
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SMALLEST_LABEL_PX = 11
NARROWEST_COLUMN_PX = {"desktop": 120, "phone": 80}
# ... and a column that narrow is crushed when a cell's text wraps onto this many lines: a column of numbers
# or short words may be narrow (the audit's precision tables fit a laptop's page that way).
CRUSHED_LINES = 3

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
    // How many lines a cell's text is drawn on: the distinct tops of its line boxes.
    const lines = (cell) => {
      const range = document.createRange();
      range.selectNodeContents(cell);
      return new Set(Array.from(range.getClientRects()).map((rect) => Math.round(rect.top))).size;
    };
    Array.from(row.children).forEach((cell, index) => {
      const cells = Array.from(table.rows).map((r) => r.cells[index]).filter(Boolean);
      columns.push({text: (cell.textContent || "").trim().slice(0, 40), px: cell.getBoundingClientRect().width,
                    lines: Math.max(...cells.map(lines))});
    });
  }
  const codes = [];
  for (const code of article.querySelectorAll("pre > code")) {
    if (code.closest("details:not([open])")) continue;
    codes.push({text: (code.textContent || "").trim().slice(0, 60), content: code.scrollWidth, block: code.clientWidth});
  }
  // Reachability: a diagram, table or transcript wider than its box must sit in a box that scrolls sideways
  // (overflow-x auto or scroll) far enough to show its right edge; nothing may widen the page itself.
  const scroller = (node) => {
    for (let box = node; box && box !== article; box = box.parentElement || (box.getRootNode && box.getRootNode().host)) {
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === "auto" || overflow === "scroll") return box;
      if (overflow === "hidden" || overflow === "clip") return null;
    }
    return null;
  };
  const reach = [];
  // `start` is where the search for a scrolling box begins: the host of a diagram (an SVG clips by default).
  const measure = (kind, start, content, text) => {
    const box = scroller(start);
    const visible = box ? box.getBoundingClientRect() : article.getBoundingClientRect();
    // A transcript's box is as wide as its column; its lines are as wide as its scrollWidth.
    const rect = content.getBoundingClientRect();
    const width = Math.max(rect.width, content.scrollWidth || 0);
    const right = rect.left + width;
    const fits = rect.left >= visible.left - 1 && right <= visible.right + 1;
    // Scrolled to its end, the box shows the content's right edge.
    const scrollable = box && box.scrollWidth > box.clientWidth
      && right - visible.left + box.scrollLeft <= box.scrollWidth + 1;
    // A phone shows a scroll bar only while a finger moves: the box's own shading says there is more.
    const cue = Boolean(box) && /gradient/.test(getComputedStyle(box).backgroundImage);
    reach.push({kind, text, width: Math.round(width), visible: Math.round(visible.width),
                reachable: fits || Boolean(scrollable), scrolls: !fits, cue});
  };
  for (const host of article.querySelectorAll("div.mermaid")) {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    if (svg) measure("diagram", host, svg, (host.getAttribute("data-title") || svg.querySelector(".actor, .nodeLabel, text")
      || svg).textContent.trim().slice(0, 40));
  }
  for (const table of article.querySelectorAll("table")) {
    if (table.closest(".jp-OutputArea, .jupyter-wrapper, details:not([open])")) continue;
    measure("table", table.parentElement, table, (table.querySelector("tr") || table).textContent.trim().slice(0, 40));
  }
  const wrapped = [];
  for (const code of article.querySelectorAll(".language-console pre > code, .language-text pre > code")) {
    if (code.closest("details:not([open])")) continue;
    const text = (code.textContent || "").replace(/\\n$/, "");
    measure("transcript", code, code, text.trim().slice(0, 40));
    // A transcript keeps its columns when no line wraps: its height is its line count times the line height.
    const style = getComputedStyle(code);
    const lines = text.split("\\n").length;
    const lineHeight = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.4;
    const rendered = code.getBoundingClientRect().height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
    if (rendered > (lines + 0.5) * lineHeight) wrapped.push({text: text.trim().slice(0, 40), lines,
                                                            rendered: Math.round(rendered / lineHeight)});
  }
  const pageWidth = {scroll: document.documentElement.scrollWidth, view: window.innerWidth};
  const openAnswers = [...article.querySelectorAll("details[open]")].map(
    (block) => (block.querySelector("summary") || block).textContent.trim().slice(0, 60));
  const nav = [...document.querySelectorAll("nav.md-nav--primary a")].map((link) => link.textContent.trim());
  return {labels, diagrams, columns, codes, openAnswers, nav, reach, wrapped, pageWidth};
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


# Marks each visible diagram, table or transcript box that scrolls sideways, scrolled to its right end.
MARK_SCROLLED = """
() => {
  const article = document.querySelector("article.md-content__inner");
  const boxes = [...article.querySelectorAll("div.mermaid, .md-typeset__scrollwrap, .language-console pre > code")]
    .filter((box) => box.scrollWidth > box.clientWidth + 1 && !box.closest("details:not([open])"));
  boxes.forEach((box, index) => { box.scrollLeft = box.scrollWidth; box.setAttribute("data-scrolled", index); });
  return boxes.map((box) => box.matches("div.mermaid") ? "diagram" : box.matches("code") ? "transcript" : "table");
}
"""


def scrolled_to_the_end(page, folder, name):
    """Screenshot every box of the page that scrolls sideways, scrolled to its end: what the last lane or column shows."""
    folder.mkdir(parents=True, exist_ok=True)
    for index, kind in enumerate(page.evaluate(MARK_SCROLLED)):
        page.locator(f'[data-scrolled="{index}"]').screenshot(path=str(folder / f"{name}-{index + 1}-{kind}.png"))


@pytest.mark.slow
@pytest.mark.parametrize("screen", VIEWPORTS)
def test_every_page_reads_on_a_laptop_and_a_phone(chromium_browser, site_url, built_site, screen):
    """On every page: diagram labels of 11 px or more (and diagrams and tables that fit a laptop's column), no crushed
    table column, no console line cut off, every answer block closed on load, the instructor section in the nav;
    a full-page screenshot of each in .budgetlab/shots/ (unless BUDGETLAB_SHOTS=0)."""
    shots = SCREENSHOTS / screen
    shots.mkdir(parents=True, exist_ok=True)
    problems = []
    measured: dict[str, list] = {}
    pages = site_pages(built_site.require())
    assert len(pages) >= 20, f"only {len(pages)} pages found in the built site"
    assert all(path in pages for path in LAB_PAGES), f"a lab page of the manifest was not built: {LAB_PAGES}"
    with probed_page(chromium_browser, (site_url,), OPEN_SHADOW_ROOTS, viewport=VIEWPORTS[screen]) as probe:
        for path in pages:
            # "load" and not "networkidle": the site fetches nothing late but its diagrams, waited for below.
            probe.page.goto(site_url + path, wait_until="load")
            wait_for_diagrams(probe.page)
            found = probe.page.evaluate(MEASURE)
            where = f"/{path} at {screen} width"
            problems += [f"{where}: diagram label {label['text']!r} drawn at {label['px']:.1f} px"
                         for label in found["labels"] if label["px"] < SMALLEST_LABEL_PX]
            problems += [f"{where}: table column {column['text']!r} only {column['px']:.0f} px wide, its text on "
                         f"{column['lines']} lines" for column in found["columns"]
                         if column["px"] < NARROWEST_COLUMN_PX[screen] and column["lines"] >= CRUSHED_LINES]
            if screen == "desktop":
                # On a laptop a diagram fits its column; on a phone it may scroll sideways instead of shrinking.
                problems += [f"{where}: diagram {diagram['text']!r} is {diagram['drawn']:.0f} px wide in a "
                             f"{diagram['column']} px column" for diagram in found["diagrams"]
                             if diagram["drawn"] > diagram["column"] + 1]
            if screen == "desktop":
                # On a laptop every table fits the page's column: a scroll there hides its last columns.
                problems += [f"{where}: table {item['text']!r} is {item['width']} px wide in a {item['visible']} px "
                             "column" for item in found["reach"] if item["kind"] == "table" and item["scrolls"]]
            if screen == "desktop" and path.startswith(WHOLE_LINES):
                problems += [f"{where}: code block {block['text']!r} is {block['content']} px wide in a "
                             f"{block['block']} px block" for block in found["codes"]
                             if block["content"] > block["block"] + 1]
            problems += [f"{where}: {item['kind']} {item['text']!r} is {item['width']} px wide in a {item['visible']} px "
                         "box that does not scroll to its end" for item in found["reach"] if not item["reachable"]]
            problems += [f"{where}: diagram {item['text']!r} scrolls sideways with nothing that shows there is more"
                         for item in found["reach"] if item["kind"] == "diagram" and item["scrolls"] and not item["cue"]]
            if screen == "phone":
                # On a phone a transcript scrolls sideways instead of wrapping, so a table in it keeps its columns.
                problems += [f"{where}: transcript {block['text']!r} wraps: {block['lines']} lines drawn as "
                             f"{block['rendered']}" for block in found["wrapped"]]
            if found["pageWidth"]["scroll"] > found["pageWidth"]["view"] + 1:
                problems.append(f"{where}: the page is {found['pageWidth']['scroll']} px wide in a "
                                f"{found['pageWidth']['view']} px window")
            measured[path] = found["reach"]
            problems += [f"{where}: the block {title!r} is open on load" for title in found["openAnswers"]]
            if not any("Instructor notes" in entry for entry in found["nav"]):
                problems.append(f"{where}: the navigation does not show the instructor notes")
            problems += [f"{where}: console error {error}" for error in probe.console_errors]
            problems += [f"{where}: fetched {url}" for url in probe.external_requests]
            probe.console_errors.clear()
            probe.external_requests.clear()
            name = path.strip("/").replace("/", "-") or "home"
            if SHOTS_WANTED:
                probe.page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
            if screen == "phone" and SHOTS_WANTED:
                scrolled_to_the_end(probe.page, shots / "scrolled", name)
    # The report the issue asks for: how many diagrams, tables and transcripts were measured, and how many scroll.
    items = [item for found in measured.values() for item in found]
    kinds = {kind: sum(1 for item in items if item["kind"] == kind) for kind in ("diagram", "table", "transcript")}
    scrolling = sum(1 for item in items if item["scrolls"])
    print(f"{screen}: {len(measured)} pages, {kinds} measured, {scrolling} scroll inside their own box")
    assert all(kinds.values()), f"nothing of some kind was measured, the check proves nothing: {kinds}"
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
