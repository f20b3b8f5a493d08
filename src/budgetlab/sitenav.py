"""The site's nav as mkdocs.yml writes it (nested lists of pages and titled sections), for the hooks that extend it."""

from __future__ import annotations


def page_of(item) -> str | None:
    """Return the page a nav item names (`page.md` or `{title: page.md}`), None for a section."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and len(item) == 1:
        value = next(iter(item.values()))
        return value if isinstance(value, str) else None
    return None


def section_of(nav: list, wanted: str) -> list | None:
    """Return the nav list that holds page `wanted`, searched depth first, or None."""
    for item in nav:
        if isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    if any(page_of(child) == wanted for child in value):
                        return value
                    if (found := section_of(value, wanted)) is not None:
                        return found
    return None


def pages_in(nav: list) -> set[str]:
    """Return every page the nav names, at any depth."""
    found = set()
    for item in nav:
        if (page := page_of(item)) is not None:
            found.add(page)
        elif isinstance(item, dict):
            for value in item.values():
                if isinstance(value, list):
                    found |= pages_in(value)
    return found
