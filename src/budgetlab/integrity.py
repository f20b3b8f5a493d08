"""The manifest of hashes over tests/, so every learner in a cohort is graded by the same checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from budgetlab.paths import labs_root

MANIFEST = "MANIFEST.json"


def _files(tests: Path) -> list[Path]:
    return sorted(p for p in tests.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.name != MANIFEST and not p.name.endswith(".pyc"))


def compute(root: Path | None = None) -> dict[str, str]:
    """Return {relative path: sha256} for every grader file."""
    tests = (root or labs_root()) / "tests"
    return {str(p.relative_to(tests)): hashlib.sha256(p.read_bytes()).hexdigest() for p in _files(tests)}


def write(root: Path | None = None) -> Path:
    """Record the current hashes (maintainers run this after changing a grader)."""
    path = (root or labs_root()) / "tests" / MANIFEST
    path.write_text(json.dumps(compute(root), indent=1, sort_keys=True) + "\n")
    return path


def modified(root: Path | None = None, under: str = "") -> list[str]:
    """Return the grader files (below `under`) whose hashes differ from the manifest, or are new or missing."""
    path = (root or labs_root()) / "tests" / MANIFEST
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        return [MANIFEST]
    current = compute(root)
    names = set(recorded) | set(current)
    return sorted(n for n in names if n.startswith(under) and recorded.get(n) != current.get(n))
