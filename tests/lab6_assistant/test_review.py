"""Hidden checks of lab 6's month-end review: on the threads pool it still ends at its budget, saying how far it got."""

from __future__ import annotations

from budgetlab.harness.grading import CouldNotGrade, faults_first
from budgetlab.stories.lab6 import (HELD_REVIEW_PAST, REVIEW_BUDGET, REVIEW_TOLERANCE, held_review_late, late,
                                    review_untested)
from budgetlab.stories.reading import counts_in


def _says_how_far(ending, what_happened: str) -> None:
    """A review that ran out of budget ends failed, with a message that counts the steps it finished."""
    assert ending.status == "failed", (
        f"{ending.name} {what_happened} and ended '{ending.status}' ('{ending.message}'), as if it had worked "
        "through its steps")
    stated = counts_in(ending.message)
    assert stated == (ending.items_done, ending.steps_total), (
        f"{ending.name} ended failed with '{ending.message}'; it finished {ending.items_done} of "
        f"{ending.steps_total} steps, and its message should say so")


def test_the_review_ends_at_its_budget_with_its_count(afternoon):
    """A review that meets a slow spell ends failed within its 180 s budget, with a message saying how many steps it finished."""
    ending = afternoon.review
    untested = review_untested(afternoon)
    if untested:
        raise CouldNotGrade(untested)
    missed = "; ".join(faults_first([late(ending, REVIEW_BUDGET)]))
    assert not missed, f"{missed} (budget {REVIEW_BUDGET:g} s, tolerance {REVIEW_TOLERANCE:g} s)"
    _says_how_far(ending, "met a model that hung for most of its budget")


def test_a_review_whose_write_the_database_holds_still_ends_with_its_count(afternoon):
    """A review whose first answer the database holds past its budget still ends failed, saying how many steps it finished."""
    ending = afternoon.held_review
    held = (f"the database held its first answer's write until {HELD_REVIEW_PAST:g} s past its "
            f"{REVIEW_BUDGET:g} s budget" if afternoon.held_review_written
            else "its first answer never reached the database")
    missed = "; ".join(faults_first([held_review_late(ending)]))
    assert not missed, f"{missed}; {held} (allowed: that and the tolerance of {REVIEW_TOLERANCE:g} s)"
    _says_how_far(ending, "met a database that held its first answer's write past its budget"
                  if afternoon.held_review_written else "never wrote its first answer")
