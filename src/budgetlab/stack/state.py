"""The stack's state file: which servers it started, on which ports, with which PIDs."""

from __future__ import annotations

import json
from pathlib import Path

from budgetlab.paths import state_dir, write_json


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
    write_json(state_file(), state)
