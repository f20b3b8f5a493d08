"""Lab 1 blames the code only for its own faults: a right limit a busy machine delivered late is exit 2."""

from __future__ import annotations

import pytest

from budgetlab.harness.grading import CouldNotGrade

from .graders import loaded


@pytest.fixture(scope="module")
def budgets():
    """The lab-1 grader module, loaded from its folder the way pytest loads it for `check 1`."""
    with loaded("lab1_worker_container", "test_lab1_budgets.py") as module:
        yield module


def _outcome(budgets, soft_at: float, killed_at: float):
    return budgets.Outcome(queue="imports", seconds=1000.0, queued=0.0, soft_limit=200.0, soft_at=soft_at,
                           hard_limit=250.0, killed_at=killed_at, ran=None)


def _late(budgets):
    """A probe whose right 200 s soft limit came far later than any allowance."""
    return budgets._limits(_outcome(budgets, 200.0 + 10 * budgets.lateness_allowed(200.0), 250.0), 200.0, 250.0,
                           "a probe")


def test_a_right_limit_that_came_late_is_the_machines(budgets):
    """Rehearsal #17: the solution's 200 s soft limit arrived 398 s in, and the check said ✗."""
    late = _late(budgets)
    assert isinstance(late, budgets.Unmeasured), late
    with pytest.raises(CouldNotGrade, match="queue 'imports': SoftTimeLimitExceeded for a 200 s limit"):
        budgets._report("", {"imports": late, "documents": None})
    assert budgets._limits(_outcome(budgets, 201.0, 251.0), 200.0, 250.0, "a probe") is None


def test_a_fault_on_one_queue_is_never_hidden_by_a_late_limit_on_another(budgets):
    late = _late(budgets)
    wrong = budgets._limits(budgets.Outcome("documents", 1000.0, 0.0, 120.0, 120.0, 250.0, 250.0, None), 200.0, 250.0,
                            "a probe")
    said = budgets._report("", {"imports": late, "documents": wrong})
    assert said == "queue 'documents': a probe got SoftTimeLimitExceeded at 120 s, not at 200 s", said
