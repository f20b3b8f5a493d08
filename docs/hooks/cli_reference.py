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

import click

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
    except Exception as exc:  # any import problem must fail a strict build, with the reason
        log.warning("cannot import budgetlab.cli to write the CLI reference: %s: %s", type(exc).__name__, exc)
        return markdown.replace(MARKER, "!!! failure \"The CLI could not be imported\"\n    The reference is generated from `budgetlab.cli`; see the build log.\n")
    return markdown.replace(MARKER, render_reference(root))


def load_root_command() -> click.Command:
    """Return the Click command behind `budgetlab.cli:app`."""
    import typer.main

    from budgetlab.cli import app

    return typer.main.get_command(app)


def walk(command: click.Command, path: tuple[str, ...] = (PROGRAM,), parent: click.Context | None = None):
    """Yield (path, command, context) for the command and every visible subcommand, depth first."""
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is None or sub.hidden:
                continue
            yield from walk(sub, (*path, name), ctx)


def anchor(path: tuple[str, ...]) -> str:
    """Return the stable anchor of a command's section, e.g. `budgetlab-stack-up`."""
    return "-".join(path)


def render_reference(root: click.Command) -> str:
    """Return Markdown for the whole tree: an index table, then one section per command."""
    entries = list(walk(root))
    lines = ["| Command | What it does |", "| --- | --- |"]
    for path, command, _ in entries[1:]:
        lines.append(f"| [`{' '.join(path)}`](#{anchor(path)}) | {_cell(command.get_short_help_str(limit=120))} |")
    lines.append("")
    for path, command, ctx in entries:
        lines.extend(render_command(path, command, ctx))
    return "\n".join(lines) + "\n"


def render_command(path: tuple[str, ...], command: click.Command, ctx: click.Context) -> list[str]:
    """Return the Markdown section of one command."""
    level = "#" * min(len(path) + 1, 6)
    out = [f"{level} `{' '.join(path)}` {{#{anchor(path)}}}", ""]
    if command.help:
        out += [_text(paragraph) + "\n" for paragraph in _paragraphs(command.help)]
    usage = " ".join([*path, *command.collect_usage_pieces(ctx)])
    out += ["```text", f"Usage: {usage}", "```", ""]

    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    options = [p for p in command.params if isinstance(p, click.Option) and not p.hidden]
    if arguments:
        out += ["**Arguments**", "", "| Name | Type | Required | Help |", "| --- | --- | --- | --- |"]
        for argument in arguments:
            help_text = getattr(argument, "help", None) or ""
            out.append(
                f"| `{argument.human_readable_name}` | {_type(argument, ctx)} | "
                f"{'yes' if argument.required else 'no'} | {_cell(help_text)} |"
            )
        out.append("")
    if options:
        out += ["**Options**", "", "| Option | Type | Default | Help |", "| --- | --- | --- | --- |"]
        for option in options:
            flags = ", ".join(f"`{flag}`" for flag in [*option.opts, *option.secondary_opts])
            out.append(f"| {flags} | {_type(option, ctx)} | {_default(option)} | {_cell(option.help or '')} |")
        out.append("")
    if isinstance(command, click.Group):
        subcommands = [name for name in command.list_commands(ctx) if not command.get_command(ctx, name).hidden]
        if subcommands:
            links = ", ".join(f"[`{name}`](#{anchor((*path, name))})" for name in subcommands)
            out += [f"**Commands:** {links}", ""]
    return out


def _type(param: click.Parameter, ctx: click.Context) -> str:
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    name = param.type.get_metavar(param, ctx) if _takes_ctx(param.type.get_metavar) else param.type.get_metavar(param)
    name = name or param.type.name.upper()
    if param.multiple or (param.nargs not in (1, None)):
        name += " …"
    return f"`{name}`"


def _takes_ctx(get_metavar) -> bool:
    # click 8.2 added a ctx argument to ParamType.get_metavar.
    return get_metavar.__code__.co_argcount >= 3


def _default(option: click.Option) -> str:
    default = option.default
    if callable(default) or default is None or option.required:
        return "–"
    if option.is_flag and option.secondary_opts:
        chosen = option.opts[0] if default else option.secondary_opts[0]
        return f"`{chosen}`"
    if isinstance(default, (list, tuple)):
        return "–" if not default else f"`{' '.join(map(str, default))}`"
    return f"`{default}`"


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
