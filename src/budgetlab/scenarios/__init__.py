"""Live scenarios for `budgetlab run N`: each plays one lab's story on the stack with the learner's code."""

from __future__ import annotations

import importlib

from budgetlab.errors import BudgetlabError


def play(lab, target_dir, console) -> int:
    """Play the scenario the lab's manifest names and return an exit code (0 when it ran, whatever it showed)."""
    if not lab.scenario:
        raise BudgetlabError(f"lab {lab.number} has no live scenario yet; 'budgetlab check {lab.number}' still grades it")
    return importlib.import_module(lab.scenario).play(target_dir, console)
