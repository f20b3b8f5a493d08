"""MkDocs hook that says once on every page, just before its first `budgetlab` command, how to put `budgetlab` on the PATH.

`make workshop` installs the command into .venv/bin, which is not on a new
shell's PATH: a bare `budgetlab run 1` is "command not found" until
`source .venv/bin/activate`. Pages write the short form; this hook puts one
note in front of the first top-level block that shows a command, unless the
page already says it before that point.
"""

from __future__ import annotations

import re

COMMAND = re.compile(r"\bbudgetlab (?:list|run|check|hint|watch|reset|solution|report|doctor|audit|stack|join|"
                     r"leave|facilitate)\b")
ACTIVATE = "source .venv/bin/activate"
FENCE = re.compile(r"^\s*(```|~~~)")
NOTE = ('!!! tip "`budgetlab` on your PATH"\n'
        "    The commands on this page run in the workshop's `.venv`: run `source .venv/bin/activate`\n"
        "    once in each new shell, or type `.venv/bin/budgetlab` in full.\n")
# Lines that continue a block above them rather than start one of their own.
CONTINUES = re.compile(r"^(?:\s|[-*+] |\d+\. |\||:|\[\^|\?\?\?|!!!|</?div|-->)")


def insertion_point(lines: list[str]) -> int | None:
    """Return the index of the line to put the note in front of, or None when the page needs no note."""
    fence, block_start = None, 0
    previous_blank = True
    for index, line in enumerate(lines):
        opened = FENCE.match(line)
        top_level = fence is None and previous_blank and line.strip() and not CONTINUES.match(line)
        if top_level or (fence is None and opened and not line.startswith(" ") and previous_blank):
            block_start = index
        if opened:
            fence = None if fence == opened.group(1) else (fence or opened.group(1))
        if ACTIVATE in line:
            return None
        if COMMAND.search(line):
            return block_start
        previous_blank = not line.strip() and fence is None
    return None


def add_note(markdown: str) -> str:
    """Return the page with the PATH note before its first command, when it lacks one."""
    body = markdown
    lines = body.split("\n")
    where = insertion_point(lines)
    if where is None:
        return markdown
    return "\n".join([*lines[:where], NOTE, *lines[where:]])


def on_page_markdown(markdown, page, config, files):
    return add_note(markdown)


NOTE_HTML = ('<div class="admonition tip"><p class="admonition-title"><code>budgetlab</code> on your PATH</p>'
             "<p>The commands on this page run in the workshop's <code>.venv</code>: run "
             "<code>source .venv/bin/activate</code> once in each new shell, or type "
             "<code>.venv/bin/budgetlab</code> in full.</p></div>\n")


def on_page_content(html, page, config, files):
    """Notebook pages skip the Markdown step: put the note at the top of one that shows a command."""
    if page.file.src_uri.endswith(".ipynb") and COMMAND.search(html) and ACTIVATE not in html:
        return NOTE_HTML + html
    return html
