"""Live scenarios for `budgetlab run N`: each plays one lab's story on the stack with the learner's code."""

from __future__ import annotations

import importlib

from budgetlab.errors import BudgetlabError


def play(number: int, target_dir, console) -> int:
    """Play lab N's scenario and return an exit code (0 when it ran, whatever it showed)."""
    try:
        module = importlib.import_module(f"budgetlab.scenarios.lab{number}")
    except ModuleNotFoundError:
        raise BudgetlabError(f"lab {number} has no live scenario yet; 'budgetlab check {number}' still grades it") from None
    return module.play(target_dir, console)
