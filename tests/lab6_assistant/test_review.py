"""Hidden check of lab 6's month-end review: on the threads pool it still ends at its budget, saying how far it got."""

from __future__ import annotations

from budgetlab.harness.grading import CouldNotGrade, faults_first
from budgetlab.stories.lab6 import REVIEW_BUDGET, REVIEW_TOLERANCE, late, review_untested
from budgetlab.stories.reading import counts_in


def test_the_review_ends_at_its_budget_with_its_count(afternoon):
    """A review that meets a slow spell ends failed within its 180 s budget, with a message saying how many steps it finished."""
    ending = afternoon.review
    untested = review_untested(afternoon)
    if untested:
        raise CouldNotGrade(untested)
    missed = "; ".join(faults_first([late(ending, REVIEW_BUDGET)]))
    assert not missed, f"{missed} (budget {REVIEW_BUDGET:g} s, tolerance {REVIEW_TOLERANCE:g} s)"
    assert ending.status == "failed", (
        f"{ending.name} met a model that hung for most of its budget and ended '{ending.status}' "
        f"('{ending.message}'), as if it had worked through its steps")
    stated = counts_in(ending.message)
    assert stated == (ending.items_done, ending.steps_total), (
        f"{ending.name} ended failed with '{ending.message}'; it finished {ending.items_done} of "
        f"{ending.steps_total} steps, and its message should say so")
