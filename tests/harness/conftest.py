"""A copy of the sample lab tree in a git repository of its own, and a way to run the CLI on it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parent / "sample"


@pytest.fixture
def sample_root(tmp_path) -> Path:
    root = tmp_path / "workshop"
    shutil.copytree(SAMPLE, root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "sample"], cwd=root, check=True)
    return root


@pytest.fixture
def cli(sample_root, tmp_path):
    """Run `budgetlab ...` as a person types it, on the sample lab, with progress kept apart."""
    state = tmp_path / "state"

    def run(*args: str, input: str | None = None, env: dict | None = None, timeout: float = 120):
        variables = dict(os.environ, BUDGETLAB_LABS_ROOT=str(sample_root), BUDGETLAB_STATE_DIR=str(state),
                         COLUMNS="200", **(env or {}))
        return subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], env=variables, input=input,
                              capture_output=True, text=True, timeout=timeout)
    run.root = sample_root
    run.state = state
    return run
