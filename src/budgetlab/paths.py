"""Where the workshop's files and its local state live on disk."""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """Return the checkout the workshop runs from (BUDGETLAB_ROOT overrides)."""
    override = os.environ.get("BUDGETLAB_ROOT")
    if override:
        return Path(override).resolve()
    # The package is installed in editable mode from src/, two levels below the root.
    return Path(__file__).resolve().parents[2]


def state_dir() -> Path:
    """Return the git-ignored folder that holds the stack's data and progress."""
    path = repo_root() / ".budgetlab"
    path.mkdir(exist_ok=True)
    return path
