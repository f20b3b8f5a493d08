"""Hidden checks of lab 6's month-end review: on the threads pool it still ends at its budget, saying how far it got."""

from __future__ import annotations

from budgetlab.harness.grading import MachineBusy, faults_first
from budgetlab.stories.lab6 import (HELD_REVIEW_WRITES, REVIEW_BUDGET, REVIEW_TOLERANCE, held_review_late,
                                    held_review_until, late, review_untested)
from budgetlab.stories.reading import counts_in


# How a held review's code that never reached the write held is told, by the write (see HELD_REVIEWS): beside
# its lateness, and beside how far it got.
_NOT_REACHED = {"answer": ("its first answer never reached the database", "never wrote its first answer"),
                "ending": ("the write that ends it never reached the database", "never wrote its ending")}


def _how_far(ending, what_happened: str) -> str | None:
    """Say what is wrong when a review that ran out of budget did not end failed with a message counting the steps it
    finished; None when it did."""
    if ending.status != "failed":
        return (f"{ending.name} {what_happened} and ended '{ending.status}' ('{ending.message}'), as if it had worked "
                "through its steps")
    stated = counts_in(ending.message)
    if stated != (ending.items_done, ending.steps_total):
        return (f"{ending.name} ended failed with '{ending.message}'; it finished {ending.items_done} of "
                f"{ending.steps_total} steps, and its message should say so")
    return None


def test_the_review_ends_at_its_budget_with_its_count(afternoon):
    """A review that meets a slow spell ends failed within its 180 s budget, with a message saying how many steps it finished."""
    ending = afternoon.review
    untested = review_untested(afternoon)
    if untested:
        raise MachineBusy(untested)
    missed = "; ".join(faults_first([late(ending, REVIEW_BUDGET)]))
    assert not missed, f"{missed} (budget {REVIEW_BUDGET:g} s, tolerance {REVIEW_TOLERANCE:g} s)"
    said = _how_far(ending, "met a model that hung for most of its budget")
    assert not said, said


def test_a_review_whose_write_the_database_holds_still_ends_with_its_count(afternoon):
    """A review whose first answer or whose ending the database holds past its budget still ends, saying how far it got."""
    problems = []
    for write, held in afternoon.held_reviews.items():
        ending = held.ending
        what = (f"the database held {HELD_REVIEW_WRITES[write]} until "
                f"{held_review_until(held.hold_ended) - REVIEW_BUDGET:.0f} s past its {REVIEW_BUDGET:g} s budget"
                if held.written else _NOT_REACHED[write][0])
        if missed := held_review_late(held):  # keeps its kind (str, or Unmeasured for the machine's)
            problems.append(type(missed)(f"{missed}; {what} (allowed: that and the tolerance of "
                                         f"{REVIEW_TOLERANCE:g} s)"))
        elif write == "ending" and ending.status == "succeeded":
            continue  # its one step was done well inside the budget: only the write that ends it came late
        elif said := _how_far(ending, f"met a database that held {HELD_REVIEW_WRITES[write]} past its budget"
                              if held.written else _NOT_REACHED[write][1]):
            problems.append(said)
    problems = faults_first(problems)
    assert not problems, "; ".join(problems)
