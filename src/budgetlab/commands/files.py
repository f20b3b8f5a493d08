"""The learner's lab files: restore the starters (after a backup) and diff against the reference."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import time
from pathlib import Path

from budgetlab.labs import Lab
from budgetlab.paths import labs_root, progress_dir


def pristine(lab: Lab, name: str) -> bytes:
    """Return a starter file as committed, from git; the working copy is the learner's."""
    from budgetlab.errors import BudgetlabError

    relative = (lab.starter_dir() / name).relative_to(labs_root())
    try:
        result = subprocess.run(["git", "show", f"HEAD:{relative.as_posix()}"], cwd=labs_root(), capture_output=True)
    except FileNotFoundError:
        raise BudgetlabError("git is not installed; the starter files are restored from the git checkout") from None
    if result.returncode != 0:
        raise BudgetlabError(f"cannot read the committed starter of {relative} from git; is this a git checkout?")
    return result.stdout


def reset(lab: Lab) -> Path | None:
    """Back up the learner's files, then restore the starters; return the backup folder (None if unchanged)."""
    changed = [name for name in lab.files
               if not (lab.starter_dir() / name).exists() or (lab.starter_dir() / name).read_bytes() != pristine(lab, name)]
    if not changed:
        return None
    backup = progress_dir() / "backups" / f"{lab.slug}-{time.strftime('%Y%m%d-%H%M%S')}"
    backup.mkdir(parents=True, exist_ok=True)
    for name in changed:
        source = lab.starter_dir() / name
        if source.exists():
            (backup / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, backup / name)
        source.write_bytes(pristine(lab, name))
    return backup


def solution_diff(lab: Lab) -> str:
    """Return a unified diff from the learner's files to the reference; writes nothing."""
    chunks = []
    for name in lab.files:
        mine = (lab.starter_dir() / name).read_text().splitlines(keepends=True)
        reference = (lab.solution_dir() / name).read_text().splitlines(keepends=True)
        chunks.extend(difflib.unified_diff(mine, reference, f"labs/{lab.slug}/{name}", f"solutions/{lab.slug}/{name}"))
    return "".join(chunks) or "your files are identical to the reference"
