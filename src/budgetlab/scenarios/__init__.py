"""Live scenarios for `budgetlab run N`: each plays one lab's story on the stack with the learner's code."""

from __future__ import annotations

import importlib

from rich.text import Text

from budgetlab.errors import BudgetlabError


def play(lab, target_dir, console) -> int:
    """Play the scenario the lab's manifest names and return an exit code (0 when it ran, whatever it showed)."""
    if not lab.scenario:
        raise BudgetlabError(f"lab {lab.number} has no live scenario yet; 'budgetlab check {lab.number}' still grades it")
    module = importlib.import_module(lab.scenario)
    # The title comes from the manifest, like every other list of labs; the scenario says what it plays.
    console.print(Text(f"Lab {lab.number} · {lab.title}", style="bold"))
    return module.play(target_dir, console)
