"""Fixtures for the docs tests: a strict build of the site, a local server for it, and a headless Chromium."""

from __future__ import annotations

import contextlib
import functools
import http.server
import subprocess
import threading
from dataclasses import dataclass

import pytest
from docs_support import (
    CANNOT_INSTALL,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    Build,
    build_site,
    vendor_assets,
)


def pytest_configure(config):
    config.addinivalue_line("markers", "browser: drives the built docs site in headless Chromium")


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Build:
    """The real docs site, built once per session with --strict."""
    vendor_assets()
    return build_site(ROOT / "mkdocs.yml", tmp_path_factory.mktemp("site") / "site")


@pytest.fixture(scope="session")
def site_url(built_site):
    """Base URL of the built site, served by a local HTTP server that stops after the session."""
    handler = functools.partial(_QuietHandler, directory=str(built_site.require()))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="docs-site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        # The test output is no place for an access log.
        pass


# Module scope: sync Playwright runs an event loop in this thread while it is open,
# and Django refuses database calls from a thread with a running loop; later
# modules of the same session use Django.
@pytest.fixture(scope="module")
def chromium_browser():
    """Debian's Chromium driven by Playwright; installed with apt-get when missing, never downloaded."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "ensure_chromium.sh")], capture_output=True, text=True, check=False
    )
    if result.returncode == CANNOT_INSTALL:
        pytest.skip(f"Chromium is missing and cannot be installed here: {result.stderr.strip()}")
    assert result.returncode == 0, f"scripts/ensure_chromium.sh failed:\n{result.stdout}{result.stderr}"
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python client is not installed")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


# Material attaches rendered Mermaid diagrams to a closed shadow root, which no
# selector can reach; the tests open it so they can look at the SVG.
OPEN_SHADOW_ROOTS = """
const attachShadow = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attachShadow.call(this, Object.assign({}, init, { mode: "open" }));
};
"""


@dataclass
class PageProbe:
    """A browser page plus what it complained about and what it tried to fetch from elsewhere."""

    page: object
    console_errors: list
    external_requests: list


@contextlib.contextmanager
def probed_page(browser, local: tuple[str, ...], init_script: str | None = None, **options):
    """Yield a fresh light-mode PageProbe whose requests outside the `local` URL prefixes are blocked and recorded."""
    context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, "color_scheme": "light", **options})
    if init_script:
        context.add_init_script(init_script)
    external: list[str] = []

    def route(route):
        url = route.request.url
        if url.startswith((*local, "data:", "blob:")):
            route.continue_()
        else:
            external.append(url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    try:
        yield PageProbe(page, errors, external)
    finally:
        context.close()


@pytest.fixture
def probe(chromium_browser, site_url):
    """A fresh light-mode page on the built site at 1280 x 900 that blocks and records every request leaving localhost."""
    with probed_page(chromium_browser, (site_url,), OPEN_SHADOW_ROOTS) as page_probe:
        yield page_probe


@pytest.fixture
def open_probe(chromium_browser):
    """Open a PageProbe on another local server (the room board): open_probe(("http://127.0.0.1:PORT/",))."""
    return functools.partial(probed_page, chromium_browser)
