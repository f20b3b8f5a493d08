"""Lab 1 blames the code only for its own faults: a right limit a busy machine delivered late is exit 2."""

from __future__ import annotations

from types import SimpleNamespace

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


def _within_budget(budgets, soft_limit, reported, ran=400.0):
    """The main fleet's three within-budget probes, each ending as given, on the copy with the 480/720 budget."""
    settings = SimpleNamespace(budget=lambda: (600.0, 900.0), error=None)
    changed = SimpleNamespace(budget=lambda: (480.0, 720.0), error=None)
    outcome = budgets.Outcome("imports", 400.0, 0.0, soft_limit, soft_limit, None, None, ran)
    probe = SimpleNamespace(outcome=lambda: outcome)
    # The main fleet as the check reads it: started, and the soft and hard limit its masters report.
    main = SimpleNamespace(require=lambda: None, reported_limits=lambda queue: reported)
    return SimpleNamespace(settings=settings, changed_settings=changed, main=main,
                           within_budget={queue: probe for queue in budgets.TRANSACTIONAL},
                           how_changed="with the numbers 600 and 900 in settings.py changed to 480 and 720")


def test_a_probe_kept_sleeping_into_the_budget_in_force_is_no_fault(budgets):
    """Pass 2 of a rehearsal: a busy machine kept a 400 s probe running into the copy's 480 s soft limit."""
    budgets.test_transactional_queues_get_the_settings_budget(_within_budget(budgets, 480.0, (480.0, 720.0), 480.0))


def test_a_limit_so_late_the_probe_ended_first_is_still_the_workers(budgets):
    with pytest.raises(AssertionError) as failed:
        budgets.test_transactional_queues_get_the_settings_budget(_within_budget(budgets, None, (120.0, None)))
    assert str(failed.value) == ("transactional queues 'imports', 'documents' and 'sweeps': a task without its own "
                                 "limit gets a 120 s soft limit there (the worker reports it) although the settings "
                                 "say 600 s"), failed.value
