"""MkDocs hook that stands in for nav pages other people are still writing, so the nav never breaks.

A page listed here that does not exist yet is built from a short placeholder
instead of failing the strict build; once the real file lands it wins and the
placeholder is never used.
"""

from __future__ import annotations

import logging

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.optional_pages")

PLACEHOLDERS = {
    "audit.md": (
        "# Audit your own code base\n\n"
        "`budgetlab audit PATH` scans a Celery code base for the patterns the labs teach.\n"
        "This page, with what each finding means and how to act on it, is still being written.\n"
    ),
}


def on_files(files, config):
    """Add a generated placeholder for each listed page that has no file yet."""
    for src_uri, content in PLACEHOLDERS.items():
        if files.get_file_from_path(src_uri) is None:
            log.info("%s does not exist yet; building a placeholder page", src_uri)
            files.append(File.generated(config, src_uri, content=content))
    return files
