"""Reads `# noqa` comments: bare silences every rule on the line, `# noqa: BL002` only that code."""

from __future__ import annotations

import re

# The word noqa must end at the line's end, a space or a colon: "noqa-free" is prose.
_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*[,\s]\s*[A-Za-z]+[0-9]+)*)|(?=$|[\s:]))",
    re.IGNORECASE,
)


def silenced(line: str, code: str) -> bool:
    """True when the line carries a noqa comment that covers code."""
    if "noqa" not in line.lower():
        return False
    for match in _NOQA.finditer(line):
        codes = match.group("codes")
        if codes is None:
            return True
        if code in {part.upper() for part in re.split(r"[,\s]+", codes) if part}:
            return True
    return False
