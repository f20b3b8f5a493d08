"""The stack's state file: which servers it started, on which ports, with which PIDs."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from budgetlab.paths import state_dir


def state_file() -> Path:
    return state_dir() / "stack.json"


def load() -> dict:
    """Return the recorded state, or an empty one when there is none or it is unreadable."""
    try:
        return json.loads(state_file().read_text())
    except (OSError, ValueError):
        return {}


def save(state: dict) -> None:
    """Write the state atomically, so a crash never leaves half a file."""
    path = state_file()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".stack.", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(state, out, indent=2, sort_keys=True)
    os.replace(tmp, path)
