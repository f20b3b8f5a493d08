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
    assert said is not None and "refused only 0 calls" in said and "over 133 s" in said, said
