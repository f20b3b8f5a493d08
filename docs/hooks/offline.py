"""MkDocs hook that keeps the built site working with no internet, and says so when it would not.

It fails a strict build when the vendored Mermaid copy is missing, removes the
MathJax loader that nbconvert puts on notebook pages (their plots need no
LaTeX, and the loader points at a CDN), and warns about any other page that
would load a script, stylesheet, image or font from another host.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.offline")

MERMAID = "assets/vendor/mermaid/mermaid.min.js"
MATHJAX_LOADER = re.compile(r'<script[^>]*\ssrc="https?://[^"]*mathjax[^"]*"[^>]*>\s*</script>', re.IGNORECASE)
EXTERNAL_ASSET = re.compile(
    r'<(?:script|img|iframe|source|audio|video)\b[^>]*\ssrc="(?:https?:)?//[^"]+"'
    r'|<link\b(?=[^>]*\srel="(?:stylesheet|preload|modulepreload|preconnect|icon)")[^>]*\shref="(?:https?:)?//[^"]+"'
    r"|@import\s+url\(\s*['\"]?(?:https?:)?//"
    r"|url\(\s*['\"]?https?://",
    re.IGNORECASE,
)


def on_pre_build(config):
    """Warn when the vendored Mermaid copy is missing: the diagrams would fall back to a CDN."""
    if not (Path(config.docs_dir) / MERMAID).is_file():
        log.warning("%s is missing; run scripts/vendor_docs_assets.sh (Mermaid diagrams need it offline)", MERMAID)


def on_page_content(html, page, config, files):
    """Drop the CDN MathJax loader from notebook pages."""
    if page.file.src_uri.endswith(".ipynb"):
        html = MATHJAX_LOADER.sub("", html)
    return html


def on_post_page(output, page, config):
    """Warn about any asset the finished page would fetch from another host."""
    match = EXTERNAL_ASSET.search(output)
    if match:
        log.warning("%s loads an asset from the internet: %s", page.file.src_uri, match.group(0)[:160])
    return output
