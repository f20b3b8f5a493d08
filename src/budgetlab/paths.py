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
    """Return the git-ignored folder of the checkout that holds the stack's data and logs.

    BUDGETLAB_STACK_DIR overrides it: `make test`'s pass on a second Python
    runs a stack of its own beside the first pass's, on the same checkout.
    """
    override = os.environ.get("BUDGETLAB_STACK_DIR")
    path = Path(override).resolve() if override else repo_root() / ".budgetlab"
    path.mkdir(parents=True, exist_ok=True)
    return path


def progress_dir() -> Path:
    """Return the folder of the learner's progress, hint counters and backups.

    BUDGETLAB_STATE_DIR overrides it; the project's own tests use that to
    drive the CLI on a sample lab without touching a learner's progress.
    """
    override = os.environ.get("BUDGETLAB_STATE_DIR")
    path = Path(override) if override else state_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def logs_dir() -> Path:
    """Return the folder of check and run logs: the progress folder's, so that checks run side by side with
    progress folders of their own (a proof's cases, the suite's tests) never write one log."""
    path = progress_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def labs_root() -> Path:
    """Return the tree that holds labs/, solutions/ and tests/ (BUDGETLAB_LABS_ROOT overrides)."""
    override = os.environ.get("BUDGETLAB_LABS_ROOT")
    return Path(override).resolve() if override else repo_root()


def board_dir() -> Path:
    """Return the folder of the facilitator's room board database, beside the progress (same override)."""
    path = progress_dir() / "board"
    path.mkdir(parents=True, exist_ok=True)
    return path


def display_path(path: Path) -> str:
    """Return a path as a person knows it: relative to the checkout when it lies inside."""
    try:
        return str(Path(path).relative_to(repo_root()))
    except ValueError:
        return str(path)


def write_json(path: Path, data: dict) -> None:
    """Write `data` as JSON to `path` atomically: a crash leaves the old file or the new one, never half of one."""
    import json
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".json")
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=2, sort_keys=True)
    os.replace(tmp, path)
