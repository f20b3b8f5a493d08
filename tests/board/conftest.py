"""A real room board (`budgetlab facilitate`) in a temporary state folder, and the CLI run as a learner types it."""

import os
import subprocess
import sys

import pytest

from budgetlab.board.rig import RoomBoard


@pytest.fixture
def board(tmp_path):
    """A running board on a free loopback port; stopped with Ctrl-C by PID afterwards."""
    with RoomBoard(tmp_path / "facilitator") as running:
        yield running


@pytest.fixture
def learner_cli(tmp_path):
    """Run `budgetlab ...` with a learner's state folder of its own."""
    state = tmp_path / "learner"

    def run(*args: str, timeout: float = 60):
        env = dict(os.environ, BUDGETLAB_STATE_DIR=str(state), COLUMNS="250", NO_COLOR="1")
        return subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], env=env, capture_output=True,
                              text=True, timeout=timeout)
    run.state = state
    return run
