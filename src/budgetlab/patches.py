"""Unified diffs between two sets of text files, written and applied strictly, with no `patch` binary.

The lab variants (wrong fixes and alternatives) are stored as these diffs
against a base tree. Applying is strict on purpose: every hunk must match
the file exactly where its header says, so a patch that no longer fits
its base fails loudly instead of landing somewhere near. The output is an
ordinary `diff -u` / `git apply` format, so people can read and apply it
with the usual tools too.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.errors import BudgetlabError

NO_NEWLINE = "\\ No newline at end of file"
DEV_NULL = "/dev/null"
# No context lines: strict applying finds each hunk by its line numbers, and the lines a hunk
# removes already prove the base is the one it was made for. `variant_patch.py tree` shows a whole file.
CONTEXT = 0
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(BudgetlabError):
    """A patch is malformed or does not fit the files it was meant for."""


@dataclass
class FilePatch:
    """The changes to one file: its old and new name (None when created or deleted) and its hunks."""

    old: str | None
    new: str | None
    hunks: list[tuple[int, list[str]]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.new or self.old or ""


def diff(before: dict[str, str], after: dict[str, str], context: int = CONTEXT) -> str:
    """Return the unified diff that turns `before` ({relative name: text}) into `after`; '' when equal."""
    out: list[str] = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        lines = difflib.unified_diff(_split(old), _split(new), n=context,
                                     fromfile=f"a/{name}" if old is not None else DEV_NULL,
                                     tofile=f"b/{name}" if new is not None else DEV_NULL)
        for line in lines:
            out.append(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE}\n")
    return "".join(out)


def _split(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def parse(text: str, source: str = "patch") -> list[FilePatch]:
    """Read a unified diff into one FilePatch per file; anything unexpected is a PatchError naming the line."""
    files: list[FilePatch] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            files.append(FilePatch(_name(line[4:]), _name(lines[i + 1][4:])))
            i += 2
        elif line.startswith("@@"):
            if not files:
                raise PatchError(f"{source}:{i + 1}: a hunk before any file header")
            i = _read_hunk(lines, i, files[-1], source)
        elif line.startswith(("diff ", "index ", "new file mode", "deleted file mode")) or not line.strip():
            i += 1  # git's extended headers and blank separators carry nothing we need
        else:
            raise PatchError(f"{source}:{i + 1}: unexpected line {line.rstrip()!r}")
    if not files:
        raise PatchError(f"{source} changes no file")
    return files


def _name(header: str) -> str | None:
    path = header.rstrip("\n").split("\t")[0].strip()
    if path == DEV_NULL:
        return None
    return path[2:] if path.startswith(("a/", "b/")) else path


def _read_hunk(lines: list[str], i: int, patch: FilePatch, source: str) -> int:
    match = _HUNK.match(lines[i])
    if not match:
        raise PatchError(f"{source}:{i + 1}: malformed hunk header {lines[i].rstrip()!r}")
    old_count = int(match.group(2) or 1)
    new_count = int(match.group(4) or 1)
    # A hunk that adds to an empty file starts at line 0; every other one names its first line.
    start = int(match.group(1)) - (1 if old_count else 0)
    body: list[str] = []
    i += 1
    while (old_count or new_count) and i < len(lines):
        line = lines[i]
        kind = line[:1]
        if kind not in (" ", "-", "+"):
            raise PatchError(f"{source}:{i + 1}: hunk ends early (expected more context, - or + lines)")
        old_count -= kind in " -"
        new_count -= kind in " +"
        body.append(line)
        i += 1
        if i < len(lines) and lines[i].startswith("\\"):
            body[-1] = body[-1].rstrip("\n")
            i += 1
    if old_count or new_count:
        raise PatchError(f"{source}:{i}: the hunk ends before the lines its header counts")
    patch.hunks.append((start, body))
    return i


def apply(files: list[FilePatch], folder: Path, source: str = "patch") -> None:
    """Apply parsed patches to the files under `folder`, each hunk exactly where its header says."""
    for patch in files:
        path = folder / patch.name
        if patch.old is None and path.exists():
            raise PatchError(f"{source}: creates {patch.name}, which already exists in {folder}")
        if patch.old is not None and not path.is_file():
            raise PatchError(f"{source}: changes {patch.name}, which is not in {folder}")
        text = _patched(_split(path.read_text() if patch.old is not None else None), patch, source)
        if patch.new is None:
            if text:
                raise PatchError(f"{source}: deletes {patch.name} but leaves lines in it")
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


def _patched(lines: list[str], patch: FilePatch, source: str) -> str:
    out: list[str] = []
    position = 0
    for start, body in patch.hunks:
        if start < position:
            raise PatchError(f"{source}: hunks of {patch.name} overlap or are out of order")
        out += lines[position:start]
        expected = [line[1:] for line in body if line[0] in " -"]
        found = lines[start:start + len(expected)]
        if found != expected:
            raise PatchError(f"{source}: the hunk at line {start + 1} of {patch.name} does not match the file "
                             "(was the base edited? rebuild the patch with scripts/variant_patch.py)")
        out += [line[1:] for line in body if line[0] in " +"]
        position = start + len(expected)
    return "".join(out + lines[position:])
