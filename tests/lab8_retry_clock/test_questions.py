"""Hidden checks of lab 8's assistant: the promise counts from the question, across every attempt, and retries spread out."""

from __future__ import annotations

from budgetlab.stories import lab8


def _problems(problems: list[str], total: int, what: str) -> str:
    return f"{len(problems)} of {total} {what}: " + "; ".join(problems[:3])


def test_questions_are_answered_while_the_provider_is_healthy(afternoon):
    """While the model answers at its usual pace, every question is answered within the promise."""
    asked = afternoon.phase("healthy") + afternoon.phase("recovered")
    problems = lab8.late_questions(asked, afternoon.lag)
    problems += [f"{q.name} ended '{q.status}' ('{q.message}') while the model was healthy"
                 for q in asked if q.status == "failed"]
    assert not problems, _problems(problems, len(asked), "questions asked while the model was healthy")


def test_every_question_ends_within_its_promise_while_the_provider_rate_limits(afternoon):
    """Twenty people ask at once into a rate limit: each question ends, answered or 'try again', within 60 s of being asked."""
    asked = afternoon.phase("limited")
    problems = lab8.late_questions(asked, afternoon.lag)
    assert not problems, _problems(problems, len(asked), f"questions asked at once while the provider rate-limited "
                                   f"(promise {lab8.PROMISE:g} s from the question)")


def test_questions_are_still_answered_while_the_provider_rate_limits(afternoon):
    """The rate limit lets calls through every few seconds: a fair share of the questions is answered, not all told to try again."""
    asked = afternoon.phase("limited")
    answered = sum(q.status == "succeeded" and q.took <= lab8.PROMISE + lab8.TOLERANCE + afternoon.lag for q in asked)
    assert answered >= lab8.ANSWERED_SHARE * len(asked), (
        f"only {answered} of {len(asked)} questions asked while the provider rate-limited were answered within "
        f"their {lab8.PROMISE:g} s, although it let a call through every {1 / lab8.LIMITED['rate']:.0f} s or so")


def test_no_attempt_starts_after_the_question_has_run_out_of_time(afternoon):
    """No question reaches the provider after its deadline, and none is still queued to run past it."""
    problems = lab8.late_attempts(afternoon)
    assert not problems, _problems(problems, len(afternoon.questions), "questions")


def test_retries_wait_for_what_the_provider_asks(afternoon):
    """After a 429, a question's next call waits at least what Retry-After asked for."""
    problems = lab8.early_retries(afternoon)
    assert not problems, _problems(problems, len(afternoon.questions), "questions")


def test_retries_do_not_come_back_in_step(afternoon):
    """Questions refused together do not come back together: never four in five of their retries after a 429 due within the same two seconds."""
    problem = lab8.in_step(afternoon)
    assert problem is None, problem
