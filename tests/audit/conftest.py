"""Shared helpers for the audit tests: a private copy of the fixtures and a CLI runner."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import budgetlab.audit

FIXTURES = Path(__file__).parent / "fixtures"
# The directory that holds the budgetlab package, so a child Python finds it
# whatever its working directory.
PACKAGE_ROOT = Path(budgetlab.audit.__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory) -> Path:
    """A copy of tests/audit/fixtures outside the repository.

    Outside the checkout no pyproject.toml of the project applies, so a
    future `exclude` in the project's own audit settings cannot hide them.
    """
    target = tmp_path_factory.mktemp("audit") / "fixtures"
    shutil.copytree(FIXTURES, target)
    return target


def _run(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.fspath(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "budgetlab.audit", *map(os.fspath, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def cli():
    """Run `python -m budgetlab.audit ARGS` in a directory; returns the CompletedProcess."""
    return _run
