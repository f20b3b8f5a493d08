"""Retries read as spread out are graded only when no busy machine could have spread them (lab 8's story)."""

from __future__ import annotations

import pytest

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories import lab8

from .graders import loaded

ASKED = 1000.0


def _retried(number: int, chosen: float, from_refusal: float, wait: float = 10.0) -> lab8.Question:
    """A question refused with a 429 and retried through Celery `wait` s later, as a busy machine let it be read:
    its retry's message left `chosen` s before its ETA, and its refusal came `from_refusal` s before it."""
    refused = ASKED + 5.0
    due = refused + from_refusal
    question = lab8.Question(number, "limited", number, ASKED, status="succeeded", answers=1, finished=due + 18.0)
    question.calls = [lab8.Call(refused, "rate_limit", wait, f"q-{number}"), lab8.Call(due + 0.1, "ok", None,
                                                                                      f"q-{number}")]
    question.retries_sent = {due: due - chosen}
    return question


# A rehearsal's doubling without jitter, a busy machine: every first retry chosen 10 s after its 429.
FIXED = [(10.0, 10.0), (10.0, 10.1), (10.0, 10.4), (10.0, 10.4), (10.0, 11.0), (8.1, 11.2), (7.7, 12.1),
         (7.0, 12.3), (4.9, 12.8)]


def test_a_fixed_wait_a_busy_machine_spread_is_not_read_as_spread_out():
    afternoon = lab8.Afternoon(questions=[_retried(n, *pair) for n, pair in enumerate(FIXED, start=1)])
    assert lab8.in_step(afternoon) is None  # each reading alone: 6 of 9 within two seconds
    said = lab8.could_be_in_step(afternoon)
    assert said == ("the questions' first retries after a 429 spread out as read, but a busy machine delayed the "
                    "worker between the refusals and the sends so much that 9 of 9 of them may have been chosen "
                    "within the same 2 seconds (is the machine very busy?)"), said
    with loaded(lab8.SLUG, "test_questions.py") as module, pytest.raises(CouldNotGrade):
        module.test_retries_do_not_come_back_in_step(afternoon)


def test_jittered_waits_read_with_a_busy_machines_noise_still_pass():
    """Waits spread over twenty seconds stay spread out inside their bounds."""
    waits = [10.0 + 2.2 * n for n in range(10)]
    afternoon = lab8.Afternoon(questions=[_retried(n, wait - 1.5, wait + 1.5)
                                          for n, wait in enumerate(waits, start=1)])
    assert lab8.in_step(afternoon) is None and lab8.could_be_in_step(afternoon) is None
    with loaded(lab8.SLUG, "test_questions.py") as module:
        module.test_retries_do_not_come_back_in_step(afternoon)


def test_a_fixed_wait_read_as_chosen_is_in_step_whatever_the_bounds_say():
    afternoon = lab8.Afternoon(questions=[_retried(n, 10.0, 10.0 + n / 4) for n in range(1, 10)])
    assert lab8.in_step(afternoon).startswith("9 of 9 questions' first retries after a 429 waited between 10 and 12 s")
