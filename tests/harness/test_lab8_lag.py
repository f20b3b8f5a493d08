"""Each question is excused the lag of its own retries, never the afternoon's worst (lab 8's story; CI, 2026-12-03)."""

from __future__ import annotations

from budgetlab.stories import lab8

ASKED = 1000.0


def _question(number: int, calls: list[tuple[float, str]], etas: list[float], took: float) -> lab8.Question:
    question = lab8.Question(number, "limited", number, ASKED, status="succeeded", answers=1,
                             finished=ASKED + took)
    question.calls = [lab8.Call(ASKED + at, behaviour, 10.0 if behaviour == "rate_limit" else None, f"q-{number}")
                      for at, behaviour in calls]
    question.retries_sent = {ASKED + eta: ASKED + eta - 10.0 for eta in etas}
    return question


def test_one_late_retry_excuses_only_its_own_question():
    """A retry a loaded machine started 15 s late once excused a wrong fix's question whose retry started on time."""
    delayed = _question(1, [(9.6, "rate_limit"), (32.6, "ok")], [17.4], took=52.0)
    on_time = _question(2, [(26.8, "rate_limit"), (57.5, "ok")], [56.2], took=79.6)
    afternoon = lab8.Afternoon(questions=[delayed, on_time], spell_started=ASKED)
    assert round(afternoon.lag_of(delayed), 1) == 15.2
    assert afternoon.lag_of(on_time) == 0.0  # due after the provider eased
    assert round(afternoon.lag, 1) == 15.2
    said = lab8.late_questions(afternoon.questions, afternoon.lag_of)
    assert len(said) == 1 and said[0].startswith("question 2 ended 'succeeded' 80 s after it was asked"), said
    assert lab8.late_questions(afternoon.questions, lambda q: afternoon.lag) == [], "the afternoon's worst lag hides it"


def test_a_lag_is_excused_only_up_to_its_limit():
    very_late = _question(1, [(5.0, "rate_limit"), (60.0, "ok")], [15.0], took=78.0)
    afternoon = lab8.Afternoon(questions=[very_late], spell_started=ASKED)
    assert afternoon.lag_of(very_late) == lab8.MOST_LAG
