"""The manifest of hashes over tests/, so every learner in a cohort is graded by the same checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from budgetlab.paths import labs_root

MANIFEST = "MANIFEST.json"


def _files(tests: Path, wanted=lambda name: True) -> list[Path]:
    return sorted(p for p in tests.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.name != MANIFEST and not p.name.endswith(".pyc") and wanted(str(p.relative_to(tests))))


def compute(root: Path | None = None, wanted=lambda name: True) -> dict[str, str]:
    """Return {relative path: sha256} for every grader file (whose relative path is `wanted`)."""
    tests = (root or labs_root()) / "tests"
    return {str(p.relative_to(tests)): hashlib.sha256(p.read_bytes()).hexdigest() for p in _files(tests, wanted)}


def write(root: Path | None = None) -> Path:
    """Record the current hashes (maintainers run this after changing a grader)."""
    path = (root or labs_root()) / "tests" / MANIFEST
    path.write_text(json.dumps(compute(root), indent=1, sort_keys=True) + "\n")
    return path


def modified(root: Path | None = None, under: str = "", top_level: bool = False) -> list[str]:
    """Return the grader files whose hashes differ from the manifest, or are new or missing.

    Only those below `under`, and with `top_level` those directly in tests/
    as well (what one lab's check imports); only they are hashed.
    """
    path = (root or labs_root()) / "tests" / MANIFEST
    try:
        recorded = json.loads(path.read_text())
    except (OSError, ValueError):
        return [MANIFEST]

    def wanted(name: str) -> bool:
        return name.startswith(under) or (top_level and "/" not in name)

    current = compute(root, wanted)
    return sorted(n for n in set(recorded) | set(current) if wanted(n) and recorded.get(n) != current.get(n))
