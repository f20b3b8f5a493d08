"""Hidden checks of lab 8's assistant: the promise counts from the question, across every attempt, and retries spread out."""

from __future__ import annotations

from budgetlab.harness.grading import MachineBusy, faults_first
from budgetlab.stories import lab8


def _problems(problems: list[str], total: int, what: str) -> str:
    return f"{len(problems)} of {total} {what}: " + "; ".join(problems[:3])


def test_questions_are_answered_while_the_provider_is_healthy(afternoon):
    """While the model answers at its usual pace, every question is answered within the promise."""
    asked = afternoon.phase("healthy") + afternoon.phase("recovered")
    problems = lab8.late_questions(asked, afternoon.lag_of, measured=True)
    problems += [lab8.unless_starved(q, f"{q.name} ended '{q.status}' ('{q.message}') while the model was healthy")
                 for q in asked if q.status == "failed"]
    problems = faults_first(problems)
    assert not problems, _problems(problems, len(asked), "questions asked while the model was healthy")


def test_every_question_ends_within_its_promise_while_the_provider_rate_limits(afternoon):
    """Twenty people ask at once into a rate limit: each question ends, answered or 'try again', within 60 s of being asked."""
    asked = afternoon.phase("limited")
    problems = faults_first(lab8.late_questions(asked, afternoon.lag_of, measured=True))
    assert not problems, _problems(problems, len(asked), f"questions asked at once while the provider rate-limited "
                                   f"(promise {lab8.PROMISE:g} s from the question)")


def test_a_question_that_waited_in_a_busy_queue_still_ends_within_its_promise(afternoon):
    """A question that waits in a busy worker's queue still ends within 60 s of being asked."""
    asked = afternoon.phase("busy")
    problems = faults_first(lab8.late_questions(asked, afternoon.lag_of, measured=True))
    assert not problems, _problems(problems, len(asked), f"questions asked while every child of the worker was busy "
                                   f"until {lab8.WAITED:g} s after the last of them (promise {lab8.PROMISE:g} s from "
                                   "the question)")


def test_refused_questions_are_tried_again_while_there_is_time(rush):
    """A question the provider refuses is tried again while its promise leaves time, not given up at once."""
    refused, retried = lab8.refused_and_retried(rush.phase("limited"))
    assert len(retried) >= lab8.RETRIED_SHARE * len(refused), (
        f"only {len(retried)} of the {len(refused)} questions the provider refused while it rate-limited were "
        f"tried again within their {lab8.PROMISE:g} s; the others were told to try again, or left waiting, "
        f"while a retry after Retry-After ({lab8.LIMITED['retry_after']:g} s), answered at the provider's pace "
        f"({lab8.LIMITED_LATENCY:g} s), still fitted")


def test_no_attempt_starts_after_the_question_has_run_out_of_time(afternoon):
    """No question reaches the provider after its deadline, none is still queued to run past it, and none runs again once it has ended."""
    problems = lab8.late_attempts(afternoon)
    assert not problems, _problems(problems, len(afternoon.questions), "questions")


def test_retries_wait_for_what_the_provider_asks(afternoon):
    """After a 429, a question's next call waits at least what Retry-After asked for."""
    problems = lab8.early_retries(afternoon)
    assert not problems, _problems(problems, len(afternoon.questions), "questions")


def test_retries_do_not_come_back_in_step(rush):
    """Questions refused together do not come back together: never more than four in five of their retries after a 429 due within the same two seconds."""
    problem = lab8.in_step(rush)
    assert problem is None, problem
    unsure = lab8.could_be_in_step(rush)
    if unsure:
        raise MachineBusy(unsure)
