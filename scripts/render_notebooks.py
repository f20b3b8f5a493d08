"""Runs the labs' notebooks and saves them, outputs and plots included, as the docs' copies.

Usage: python scripts/render_notebooks.py [budget|stats ...]   (needs `budgetlab stack up`)

The labs' own copies stay without outputs; the docs site renders the saved
copies and never runs a kernel. Random draws in the notebooks are seeded and
no timing metadata is kept, so a re-render changes a file only where the
figures changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from budgetlab import labs  # noqa: E402 - after the checkout's src/ is on the path

# name -> (the lab's notebook, the docs' rendered copy), for every notebook the manifest declares
NOTEBOOKS = {Path(name).stem: (lab.starter_dir(ROOT) / name, ROOT / "docs" / "notebooks" / Path(name).name)
             for lab in labs.load(ROOT) for name in lab.notebooks}


def render(source: Path, target: Path) -> Path:
    """Execute `source` top to bottom in a fresh kernel and write the result to `target`."""
    import nbformat
    from nbclient import NotebookClient

    from budgetlab.harness.rig import Rig

    notebook = nbformat.read(source, as_version=4)
    # The kernel inherits Kontor's database from this process: the rig's scratch copy, dropped after.
    with Rig(source.parent, label="notebook") as rig, rig.kontor_env():
        NotebookClient(notebook, timeout=180, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(source.parent)}}).execute()
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main(names: list[str]) -> int:
    from nbclient.exceptions import CellExecutionError

    from budgetlab import stack
    from budgetlab.errors import BudgetlabError

    unknown = [name for name in names if name not in NOTEBOOKS]
    if unknown:
        print(f"error: no notebook named {', '.join(unknown)}; choose from {', '.join(NOTEBOOKS)}", file=sys.stderr)
        return 2
    try:
        stack.require()  # the stats notebook measures the live stack
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name in names or list(NOTEBOOKS):
        source, target = NOTEBOOKS[name]
        try:
            render(source, target)
        except CellExecutionError as exc:
            print(f"error: a cell of {source.name} failed: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
            return 1
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
