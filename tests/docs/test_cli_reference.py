"""The command-line reference on the site covers every command, argument and option of the real CLI."""

from __future__ import annotations

import html
import re

import pytest
from docs_support import DOCS

REFERENCE_SOURCE = "reference/cli.md"


def cli_tree():
    """Return (path, command, context) for every visible command of `budgetlab`, walked independently of the hook."""
    import typer.main

    from budgetlab.cli import app

    root = typer.main.get_command(app)
    found = []

    def visit(command, path, parent):
        ctx = command.context_class(command, info_name=path[-1], parent=parent)
        found.append((path, command, ctx))
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not getattr(sub, "hidden", False):
                    visit(sub, (*path, name), ctx)

    visit(root, ("budgetlab",), None)
    return found


def page_text(markup: str) -> str:
    """Return the visible text of some HTML, with whitespace collapsed."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", markup))
    return re.sub(r"\s+", " ", text)


def section(page: str, anchor: str) -> str:
    """Return the HTML of one command's section: from its heading to the next heading."""
    start = page.find(f'id="{anchor}"')
    assert start != -1, f"the reference has no section with id {anchor!r}"
    following = re.search(r"<h[1-6][ >]", page[start:])
    return page[start : start + following.start()] if following else page[start:]


@pytest.fixture(scope="module")
def reference_page(built_site):
    return (built_site.require() / "reference" / "cli" / "index.html").read_text(encoding="utf-8")


def test_cli_has_commands_to_document():
    """The CLI tree is importable and has subcommands, so the other checks are not vacuous."""
    assert len(cli_tree()) > 1, "budgetlab.cli:app has no subcommands"


def test_every_command_has_its_own_section(reference_page):
    """Each command and subcommand gets a heading with a stable anchor, e.g. #budgetlab-stack-up."""
    for path, _, _ in cli_tree():
        body = page_text(section(reference_page, "-".join(path)))
        assert " ".join(path) in body, f"the section of `{' '.join(path)}` does not name the command"


def test_every_command_help_is_shown(reference_page):
    """The one-line help of every command appears in its section."""
    for path, command, _ in cli_tree():
        short = re.sub(r"\s+", " ", command.get_short_help_str(limit=300)).strip()
        assert short, f"`{' '.join(path)}` has no help text; every command needs a one-line help"
        body = page_text(section(reference_page, "-".join(path)))
        assert short in body, f"the help of `{' '.join(path)}` is missing from its section: {short!r}"


def test_every_argument_and_option_is_documented_with_its_help(reference_page):
    """Each visible argument and option of a command appears in that command's section, with its help."""
    for path, command, _ in cli_tree():
        body = page_text(section(reference_page, "-".join(path)))
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = [*param.opts, *param.secondary_opts] if param.param_type_name == "option" else [param.name]
            for name in names:
                assert name in body, f"`{' '.join(path)}`: {name} is missing from the reference"
            help_text = re.sub(r"\s+", " ", getattr(param, "help", None) or "").strip()
            assert help_text, f"`{' '.join(path)}`: {names[0]} has no help text"
            assert help_text in body, f"`{' '.join(path)}`: the help of {names[0]} is missing from the reference"


def test_every_command_is_mentioned_in_the_prose():
    """Each command is used somewhere in the hand-written pages, not only in the generated reference."""
    prose = "\n".join(
        path.read_text(encoding="utf-8")
        for path in DOCS.rglob("*.md")
        if path.relative_to(DOCS).as_posix() != REFERENCE_SOURCE
    )
    missing = [" ".join(path) for path, _, _ in cli_tree()[1:] if " ".join(path) not in prose]
    assert not missing, f"commands no docs page explains: {missing}"
