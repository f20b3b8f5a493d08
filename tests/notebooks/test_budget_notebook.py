"""Lab 1's notebook runs top to bottom, draws its three plots, and its numbers support its conclusion."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "labs" / "lab1_worker_container" / "budget.ipynb"
RENDERED = ROOT / "docs" / "notebooks" / "budget.ipynb"


def _run() -> list[dict]:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    assert not any(cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        "the lab's notebook is committed with outputs; only docs/notebooks/budget.ipynb keeps them"
    NotebookClient(notebook, timeout=180, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def _fits(text: str, files: int) -> list[float]:
    """Return the row of the P(batch fits) table for a batch size, one share per budget."""
    row = re.search(rf"^\s*{files}((?:\s+[\d.]+%)+)\s*$", text, re.MULTILINE)
    assert row, f"no row for {files} files in the notebook's table:\n{text}"
    return [float(value) / 100 for value in re.findall(r"([\d.]+)%", row[1])]


@pytest.mark.slow
def test_budget_notebook_runs_and_supports_its_conclusion():
    """The notebook runs, plots three figures, and shows 120 s hopeless and 600 s a bet for 95 files."""
    outputs = _run()
    text = "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")
    plots = [output for output in outputs if "image/png" in output.get("data", {})]
    assert len(plots) == 3, f"expected the tail, the P(fit) chart and the uploads, found {len(plots)} plots"
    assert re.search(r"median\s+about 5\.5 s\s+5\.[45] s", text), f"the model's median is off:\n{text}"
    one_twenty, six_hundred, nine_hundred, _ = zip(*(_fits(text, n) for n in (20, 60, 95)), strict=True)
    assert one_twenty[0] < 0.3, "most 20-file batches fit 120 s, which the conclusion denies"
    assert six_hundred[1] > 0.95 and six_hundred[2] < 0.1, "600 s does not fit 60 files yet fail 95"
    assert nine_hundred[2] > 0.9, "900 s does not cover 95 files nearly always"
    assert "40-file upload: 327 s" in text, f"the run's 40-file upload changed:\n{text}"


def test_docs_copy_matches_the_lab_notebook():
    """docs/notebooks/budget.ipynb is a rendering of the lab's notebook as it is now."""
    import nbformat

    lab = nbformat.read(NOTEBOOK, as_version=4)
    docs = nbformat.read(RENDERED, as_version=4)
    assert [cell.source for cell in lab.cells] == [cell.source for cell in docs.cells], \
        "re-render it: python scripts/render_notebooks.py budget"
    plots = [output for cell in docs.cells if cell.cell_type == "code" for output in cell.outputs
             if "image/png" in output.get("data", {})]
    assert len(plots) == 3, f"the docs copy has {len(plots)} of its 3 plots; re-render it"
