"""Runs lab 5's notebook against the stack and saves it, outputs and plots included, as the docs' copy.

Usage: python scripts/render_notebook_lab5.py   (needs `budgetlab stack up`; writes docs/notebooks/stats.ipynb)

The lab's own copy, labs/lab5_frozen_stats/stats.ipynb, stays without
outputs; the docs site renders the saved copy and never runs a kernel.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "labs" / "lab5_frozen_stats" / "stats.ipynb"
TARGET = ROOT / "docs" / "notebooks" / "stats.ipynb"


def render(source: Path = SOURCE, target: Path = TARGET) -> Path:
    """Execute `source` top to bottom in a fresh kernel and write the result to `target`."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    # No timing metadata: a re-render changes the file only where the figures changed.
    NotebookClient(notebook, timeout=180, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(source.parent)}}).execute()
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main() -> int:
    from budgetlab import stack
    from budgetlab.errors import BudgetlabError

    try:
        stack.require()
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from nbclient.exceptions import CellExecutionError

    try:
        path = render()
    except CellExecutionError as exc:
        print(f"error: a cell of {SOURCE.name} failed: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
