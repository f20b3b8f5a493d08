"""Turns launch files (shell, Dockerfile, Procfile, unit files, YAML) into command words with positions.

Launch files are read as text lines, never executed or fully parsed: a shell
script, a Dockerfile's CMD (shell or JSON-array form), a Procfile line, an
ExecStart= line, a compose `command:` and a Kubernetes `command:`/`args:` pair
all come down to a list of words, each with its 1-based line and column.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# Quoted strings, shell operators, or bare words. Commas inside a bare word
# stay (`-Q a,b`); a trailing comma and brackets belong to YAML/JSON lists.
_PIECE = re.compile(
    r'"((?:[^"\\]|\\.)*)"'
    r"|'([^']*)'"
    r"|(&&|\|\||[;&|()])"
    r"|([^\s\"'\[\],;&|()]+(?:,[^\s\"'\[\],;&|()]+)*)"
)
_YAML_KEY = re.compile(r"^(\s*)(?:-\s+)?(command|args|entrypoint)\s*:(?=\s|$)")
_BLOCK_SCALAR = re.compile(r"^\s*[|>][-+0-9]*\s*$")


@dataclass(frozen=True)
class Word:
    """One word of a command line; line and column are 1-based."""

    text: str
    line: int
    column: int


@dataclass
class Command:
    """The words of one command, and the lines it was read from.

    anchor_line is where the construct starts (the `command:` key of a YAML
    block, the first line of a shell command): comments directly above it
    describe the command.
    """

    words: list[Word]
    anchor_line: int
    first_line: int
    last_line: int


def comment_of(line: str, semicolon: bool = False) -> str | None:
    """Text of the line's comment (after an unquoted #), or None when it has none."""
    stripped = line.lstrip()
    if semicolon and stripped.startswith(";"):
        return stripped[1:].strip()
    start = _comment_start(line)
    return None if start is None else line[start + 1 :].strip()


def is_comment_line(line: str, semicolon: bool = False) -> bool:
    """True for a line that holds only a comment."""
    stripped = line.lstrip()
    return stripped.startswith("#") or (semicolon and stripped.startswith(";"))


def _code_part(line: str) -> str:
    """The line with its comment cut off, same columns for what stays."""
    start = _comment_start(line)
    return line if start is None else line[:start]


def _comment_start(line: str) -> int | None:
    """Column of the line's comment mark: a # outside quotes, after white space (a shell word may hold one)."""
    quote = None
    previous = " "
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#" and previous in " \t":
            return index
        previous = char
    return None


class _Text:
    """Pieces of several physical lines joined into one string, with a map back to positions."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.starts: list[int] = []
        self.origins: list[tuple[int, int]] = []  # (line, column0) of each part
        self.length = 0

    def add(self, text: str, line: int, column0: int) -> None:
        self.starts.append(self.length)
        self.origins.append((line, column0))
        self.parts.append(text + " ")
        self.length += len(text) + 1

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        line, column0 = self.origins[index]
        return line, column0 + offset - self.starts[index] + 1

    def joined(self) -> str:
        return "".join(self.parts)


def _words(text: str, base: int, into: list[Word | None], where: _Text) -> None:
    """Append the words of text (starting at offset base); None marks a command separator."""
    last_end = -1
    for match in _PIECE.finditer(text):
        double, single, operator, bare = match.groups()
        start = base + match.start()
        if operator is not None:
            into.append(None)
            last_end = -1
            continue
        content = bare if bare is not None else (double if double is not None else single)
        helm = content.lstrip().startswith("{{")  # a template expression is one word, spaces and all
        if bare is None and content.strip() and not helm and any(space in content for space in " \t\n"):
            # A quoted command (sh -c "celery ... worker ..."): read its words too.
            _words(content, start + 1, into, where)
            last_end = -1
            continue
        if double is not None:
            content = content.replace('\\"', '"')
        previous = into[-1] if into else None
        if previous is not None and match.start() == last_end:
            # Adjacent pieces form one shell word: --soft-time-limit="${X:-120}".
            into[-1] = Word(previous.text + content, previous.line, previous.column)
        else:
            # A quoted word's position is that of its first character, not the quote.
            line, column = where.position(start if bare is not None else start + 1)
            into.append(Word(content, line, column))
        last_end = match.end()


def _split(words: list[Word | None], anchor: int) -> list[Command]:
    commands: list[Command] = []
    current: list[Word] = []
    for word in [*words, None]:
        if word is None:
            if current:
                commands.append(
                    Command(current, min(anchor, current[0].line), current[0].line, current[-1].line)
                )
            current = []
        else:
            current.append(word)
    return commands


def shell_commands(lines: list[str], semicolon: bool = False, taken: set[int] | None = None) -> list[Command]:
    """Commands of shell-like lines; a trailing backslash continues a line.

    Comment lines inside a continued command (allowed in Dockerfiles) are
    skipped; lines in taken (1-based) were read already and are ignored.
    """
    commands: list[Command] = []
    count = len(lines)
    index = 0
    while index < count:
        line = lines[index]
        if (taken and index + 1 in taken) or not line.strip() or is_comment_line(line, semicolon):
            index += 1
            continue
        if "celery" not in line and not line.rstrip().endswith("\\"):
            index += 1
            continue
        text = _Text()
        first = index
        while True:
            code = _code_part(lines[index]).rstrip()
            continued = code.endswith("\\")
            if continued:
                code = code[:-1]
            text.add(code, index + 1, 0)
            if not continued or index + 1 >= count:
                break
            index += 1
            while index + 1 < count and is_comment_line(lines[index], semicolon):
                index += 1
        joined = text.joined()
        if "celery" in joined:
            words: list[Word | None] = []
            _words(joined, 0, words, text)
            commands.extend(_split(words, first + 1))
        index += 1
    return commands


def yaml_commands(lines: list[str]) -> list[Command]:
    """Commands of YAML `command:`/`args:`/`entrypoint:` values, plus any other celery lines.

    A key's value is its own line plus every following line indented deeper
    (or a list item at the key's own indent). Keys at one indent in one
    mapping (a Kubernetes container's command and args) are read as one
    command. Lines outside these values are read as shell lines, which covers
    a CI step's `run: celery ...`.
    """
    blocks: list[tuple[int, int, int]] = []  # (key column, first index, last index)
    count = len(lines)
    index = 0
    while index < count:
        match = _YAML_KEY.match(lines[index])
        if not match:
            index += 1
            continue
        key_column = match.start(2)
        end = index
        probe = index + 1
        while probe < count:
            line = lines[probe]
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                probe += 1
                continue
            indent = len(line) - len(line.lstrip())
            if indent > key_column or (indent == key_column and stripped.startswith("-")):
                end = probe
                probe += 1
                continue
            break
        blocks.append((key_column, index, end))
        index = end + 1

    groups: list[list[tuple[int, int, int]]] = []
    for block in blocks:
        if groups and groups[-1][-1][0] == block[0] and _same_mapping(lines, groups[-1][-1], block):
            groups[-1].append(block)
        else:
            groups.append([block])

    commands: list[Command] = []
    taken: set[int] = set()
    for group in groups:
        text = _Text()
        for _, first, last in group:
            for line_index in range(first, last + 1):
                taken.add(line_index + 1)
                line = lines[line_index]
                code = _code_part(line)
                column0 = 0
                if line_index == first:
                    match = _YAML_KEY.match(line)
                    column0 = match.end()
                    code = code[column0:]
                    if _BLOCK_SCALAR.match(code):
                        continue
                stripped = code.lstrip()
                if stripped.startswith("- ") or stripped == "-":
                    lead = len(code) - len(stripped) + 1
                    column0 += lead
                    code = code[lead:]
                code = code.rstrip()
                if code.endswith("\\"):
                    code = code[:-1]
                text.add(code, line_index + 1, column0)
        joined = text.joined()
        if "celery" not in joined:
            continue
        words: list[Word | None] = []
        _words(joined, 0, words, text)
        commands.extend(_split(words, group[0][1] + 1))
    commands.extend(shell_commands(lines, taken=taken))
    return commands


def _same_mapping(lines: list[str], previous: tuple[int, int, int], block: tuple[int, int, int]) -> bool:
    """True when only sibling keys (same indent or deeper) sit between two key blocks."""
    key_column = previous[0]
    for line in lines[previous[2] + 1 : block[1]]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        if indent < key_column or (indent == key_column and stripped.startswith("-")):
            return False
    # A new list item introducing the second key ("- command:") starts a new container.
    second = lines[block[1]]
    return not second.lstrip().startswith("-")


def read_commands(text: str, kind: str) -> tuple[list[str], list[Command]]:
    """Lines and commands of a launch file of the given kind ("shell", "yaml", "keyvalue")."""
    lines = text.splitlines()
    if "celery" not in text:
        return lines, []
    if kind == "yaml":
        return lines, yaml_commands(lines)
    return lines, shell_commands(lines, semicolon=kind == "keyvalue")
