"""Lab 5's notebook runs top to bottom against the database Kontor is pointed at, shows the frozen delta, and plots."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetlab import stack

NOTEBOOK = Path(__file__).resolve().parents[2] / "labs" / "lab5_stats_sampler" / "stats.ipynb"


def _notebook_databases() -> set[str]:
    import psycopg

    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as admin:
        rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                             [f"{stack.database_name()}_notebook_%"]).fetchall()
    return {row[0] for row in rows}


@pytest.mark.stack
@pytest.mark.slow
def test_stats_notebook_runs_against_the_stack():
    """The statistics notebook runs, shows a frozen delta beside a true one, and draws its plots."""
    import nbformat
    from nbclient import NotebookClient

    from budgetlab.harness.rig import Rig

    stack.require()
    before = _notebook_databases()
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "the lab's notebook is committed with outputs; only docs/notebooks/stats.ipynb keeps them"
    # The kernel inherits Kontor's database from this process, as a learner's does from eval "$(budgetlab stack env)".
    with Rig(NOTEBOOK.parent, label="notebook") as rig, rig.kontor_env():
        NotebookClient(notebook, timeout=180, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    left = _notebook_databases() - before
    assert not left, f"a scratch database was left behind: {sorted(left)}"
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    text = "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")
    assert re.search(r"delta inside one transaction: 0\b", text), f"no frozen delta of 0 in the output:\n{text}"
    assert re.search(r"delta in autocommit: +500\b", text), f"no autocommit delta of 500 in the output:\n{text}"
    plots = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(plots) == 2, f"expected the two plots, found {len(plots)}"
