"""An afternoon whose rush never reached the rate-limited provider is no afternoon to grade (lab 8's story)."""

from __future__ import annotations

from budgetlab.stories import lab8


def _afternoon(first_calls: list[tuple[float, str]]) -> lab8.Afternoon:
    afternoon = lab8.Afternoon()
    for number, (at, behaviour) in enumerate(first_calls, start=1):
        question = lab8.Question(number, "limited", number, 0.0)
        question.calls = [lab8.Call(at, behaviour, 10.0 if behaviour == "rate_limit" else None, f"q-{number}")]
        afternoon.questions.append(question)
    return afternoon


def test_a_rush_the_provider_refused_is_graded():
    calls = [(0.1 * n, "ok" if n < 3 else "rate_limit") for n in range(20)]
    assert lab8.rush_missing(_afternoon(calls)) is None


def test_calls_that_came_too_far_apart_to_be_refused_cannot_be_graded():
    calls = [(7.0 * n, "ok") for n in range(20)]
    said = lab8.rush_missing(_afternoon(calls))
    assert said is not None and "only 0 of the 20 questions" in said, said
    assert "20 of them reached it over 133 s" in said, said


def test_too_few_first_calls_refused_with_a_429_to_tell_a_spread_cannot_be_graded():
    """The checks of the retries' spread need STEP_MINIMUM first refusals; a 503 first is no 429."""
    short = lab8.STEP_MINIMUM - 1
    calls = [(0.1 * n, "rate_limit" if n < short else "server_error" if n < short + 3 else "ok") for n in range(20)]
    said = lab8.rush_missing(_afternoon(calls))
    assert said is not None and f"only {short} of the 20" in said, said
    calls[-1] = (2.0, "rate_limit")
    assert lab8.rush_missing(_afternoon(calls)) is None


def test_first_refusals_too_late_for_a_retry_to_fit_do_not_make_a_rush():
    """A refusal with less than Retry-After and a slow call left is rightly given up on: it tells nothing of retries."""
    late = lab8.PROMISE - lab8.LIMITED["retry_after"] - lab8.LIMITED_LATENCY
    calls = [(0.1 * n if n < 4 else late, "rate_limit") for n in range(20)]
    said = lab8.rush_missing(_afternoon(calls))
    assert said is not None and "only 4 of the 20" in said, said
