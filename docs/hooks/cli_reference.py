"""MkDocs hook that writes the command-line reference from the `budgetlab` CLI itself.

The page docs/reference/cli.md holds a marker; at build time it is replaced by
one section per command and subcommand, with usage, arguments and options and
their help, read from the Click tree that Typer builds. The reference cannot
drift from the CLI because it is never written by hand.
"""

from __future__ import annotations

import html
import logging
import re
import sys
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.cli_reference")

PAGE = "reference/cli.md"
MARKER = "<!-- budgetlab-cli-reference -->"
PROGRAM = "budgetlab"


def on_config(config):
    """Make `src/` importable, so a plain checkout builds without installing the package."""
    src = Path(config.config_file_path).resolve().parent / "src"
    if src.is_dir() and str(src) not in sys.path:
        sys.path.append(str(src))
    return config


def on_page_markdown(markdown, page, config, files):
    """Replace the marker on the reference page with the generated sections."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        log.warning("%s has lost its marker %s; the CLI reference is missing", PAGE, MARKER)
        return markdown
    try:
        root = load_root_command()
    except Exception as exc:  # noqa: BLE001 - any import problem must fail a strict build, with the reason
        log.warning("cannot import budgetlab.cli to write the CLI reference: %s: %s", type(exc).__name__, exc)
        return markdown.replace(MARKER, "!!! failure \"The CLI could not be imported\"\n    The reference is generated from `budgetlab.cli`; see the build log.\n")
    return markdown.replace(MARKER, render_reference(root))


def load_root_command():
    """Return the Click command behind `budgetlab.cli:app`."""
    import typer.main

    from budgetlab.cli import app

    return typer.main.get_command(app)


# Recent Typer releases ship their own copy of Click, whose classes are not
# click.Group or click.Option; the functions below therefore look at what an
# object can do (list_commands, param_type_name, get_help_record), never at
# which class it is.


def is_group(command) -> bool:
    """Tell whether a Click command has subcommands."""
    return hasattr(command, "list_commands") and hasattr(command, "get_command")


def walk(command, path: tuple[str, ...] = (PROGRAM,), parent=None):
    """Yield (path, command, context) for the command and every visible subcommand, depth first."""
    ctx = command.context_class(command, info_name=path[-1], parent=parent)
    yield path, command, ctx
    if is_group(command):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or getattr(sub, "hidden", False):
                continue
            yield from walk(sub, (*path, name), ctx)


def visible_params(command, kind: str) -> list:
    """Return the declared, visible parameters of one kind: "argument" or "option"."""
    return [p for p in command.params if p.param_type_name == kind and not getattr(p, "hidden", False)]


def anchor(path: tuple[str, ...]) -> str:
    """Return the stable anchor of a command's section, e.g. `budgetlab-stack-up`."""
    return "-".join(path)


def render_reference(root) -> str:
    """Return Markdown for the whole tree: an index table, then one section per command."""
    entries = list(walk(root))
    lines = ["| Command | What it does |", "| --- | --- |"]
    for path, command, _ in entries[1:]:
        lines.append(f"| [`{' '.join(path)}`](#{anchor(path)}) | {_cell(command.get_short_help_str(limit=120))} |")
    lines.append("")
    for path, command, ctx in entries:
        lines.extend(render_command(path, command, ctx))
    return "\n".join(lines) + "\n"


def render_command(path: tuple[str, ...], command, ctx) -> list[str]:
    """Return the Markdown section of one command."""
    level = "#" * min(len(path) + 1, 6)
    out = [f"{level} `{' '.join(path)}` {{#{anchor(path)}}}", ""]
    if command.help:
        out += [_text(paragraph) + "\n" for paragraph in _paragraphs(command.help)]
    usage = " ".join([*path, *command.collect_usage_pieces(ctx)])
    out += ["```text", f"Usage: {usage}", "```", ""]

    arguments = visible_params(command, "argument")
    if arguments:
        out += ["**Arguments**", "", "| Argument | Help |", "| --- | --- |"]
        for argument in arguments:
            declaration, help_text = _help_record(argument, ctx)
            out.append(f"| `{declaration}` | {_cell(help_text)} |")
        out.append("")
    options = visible_params(command, "option")
    if options:
        out += ["**Options**", "", "| Option | Help |", "| --- | --- |"]
        for option in options:
            declaration, help_text = _help_record(option, ctx)
            out.append(f"| `{declaration}` | {_cell(help_text)} |")
        out.append("")
    if is_group(command):
        names = [name for name in command.list_commands(ctx) if not getattr(command.get_command(ctx, name), "hidden", False)]
        if names:
            links = ", ".join(f"[`{name}`](#{anchor((*path, name))})" for name in names)
            out += [f"**Commands:** {links}", ""]
    return out


def _help_record(param, ctx) -> tuple[str, str]:
    """Return a parameter's declaration and help as `--help` shows them, defaults included."""
    record = param.get_help_record(ctx) if hasattr(param, "get_help_record") else None
    if record:
        return record[0], record[1] or ""
    # Plain Click gives arguments no help record and no help text.
    declaration = getattr(param, "human_readable_name", None) or param.name.upper()
    help_text = getattr(param, "help", None) or ""
    if getattr(param, "required", False):
        help_text = f"{help_text}  [required]".strip()
    return declaration, help_text


def _paragraphs(text: str) -> list[str]:
    """Split a help text into paragraphs, dropping Click's \\b and \\f markers and what follows \\f."""
    text = text.split("\f", 1)[0]
    paragraphs = [re.sub(r"\s*\n\s*", " ", p.replace("\b", "").strip()) for p in re.split(r"\n\s*\n", text)]
    return [p for p in paragraphs if p]


def _text(text: str) -> str:
    """Escape a help text for Markdown, keeping `code spans` as they are."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(part if part.startswith("`") else re.sub(r"([*_\[\]])", r"\\\1", html.escape(part, quote=False)) for part in parts)


def _cell(text: str) -> str:
    return " ".join(_text(p) for p in _paragraphs(text)).replace("|", "\\|")
