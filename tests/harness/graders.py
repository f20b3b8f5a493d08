"""A lab's grader module loaded from its folder, as pytest loads it for a check, for tests that read its verdicts."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

from budgetlab.paths import repo_root


@contextlib.contextmanager
def loaded(slug: str, filename: str):
    """Yield tests/<slug>/<filename> as a module, its folder on sys.path (for its helpers) while it is used."""
    folder = repo_root() / "tests" / slug
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(f"{slug}_{Path(filename).stem}_under_test", folder / filename)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs: a dataclass in a grader module looks its module up by name.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
        sys.path.remove(str(folder))
