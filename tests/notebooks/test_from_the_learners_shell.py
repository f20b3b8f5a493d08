"""Every notebook runs, again and again, from the shell its page describes: one that ran eval "$(budgetlab stack env)".

`budgetlab stack env` points a shell at the stack and leaves it on wall time:
the lab clock belongs to the processes budgetlab starts for lab code. Once it
put the shell's every Python on the clock, and Jupyter's own 60 s kernel
time-out then ran out after 0.3 wall seconds (issue 40).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetlab import labs

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Runs of each notebook in a row; issue 40's done-when asks for five, by hand: BUDGETLAB_NOTEBOOK_RUNS=5.
RUNS = int(os.environ.get("BUDGETLAB_NOTEBOOK_RUNS", "2"))
pytestmark = pytest.mark.stack


def _notebooks() -> list[tuple[Path, int]]:
    """The labs' notebooks (the manifest's), each RUNS times.

    The docs' copies are these notebooks run once and saved (scripts/render_notebooks.py), so running them
    too would run the same cells again; BUDGETLAB_NOTEBOOK_RUNS=5 by hand runs the lab notebooks five
    times, as issue 40 asks.
    """
    return [(lab.starter_dir(ROOT) / name, RUNS) for lab in labs.load(ROOT) for name in lab.notebooks]


def _in_the_learners_shell(command: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run a command in bash after eval "$(budgetlab stack env)", as the lab pages tell a learner to."""
    script = f'eval "$({shlex.quote(str(BIN / "budgetlab"))} stack env)" && {command}'
    # The shell a learner opens: none of the lab clock's variables a grader's environment may carry.
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("BUDGETLAB_CLOCK") and key not in ("PYTHONPATH", "PGOPTIONS")}
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_stack_env_sets_kontor_s_variables_and_nothing_of_the_clock():
    """The shell gets Kontor's database, broker and settings; Python started from it reads wall time."""
    result = _in_the_learners_shell(f"env; {shlex.quote(sys.executable)} -c 'import time; print(time.time())'", ROOT)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    names = {line.split("=", 1)[0] for line in lines if "=" in line}
    assert {"KONTOR_DATABASE_URL", "KONTOR_BROKER_URL", "DJANGO_SETTINGS_MODULE"} <= names, sorted(names)
    leaked = sorted(name for name in names if name.startswith("BUDGETLAB_CLOCK") or name in ("PYTHONPATH", "PGOPTIONS"))
    assert not leaked, f"stack env exported {leaked}"
    assert abs(float(lines[-1]) - time.time()) < 30, f"a Python started from the shell read {lines[-1]}, not wall time"


@pytest.mark.slow
@pytest.mark.parametrize("notebook, runs", _notebooks(), ids=lambda value: str(value.relative_to(ROOT))
                         if isinstance(value, Path) else f"{value}x")
def test_a_notebook_runs_again_and_again_from_the_learners_shell(notebook, runs, tmp_path):
    """jupyter nbconvert --execute, started from that shell in the notebook's folder, runs it to its end every time."""
    for run in range(1, runs + 1):
        out = tmp_path / f"run-{run}.ipynb"
        result = _in_the_learners_shell(
            f"{shlex.quote(str(BIN / 'jupyter'))} nbconvert --to notebook --execute "
            f"--output {shlex.quote(str(out))} {shlex.quote(notebook.name)}", notebook.parent)
        assert result.returncode == 0 and out.exists(), (
            f"run {run} of {runs} of {notebook.name} failed:\n{result.stderr[-3000:]}")
