"""A retry due sooner than Retry-After asked is early, whether or not a busy machine got it to the provider (lab 8's story)."""

from __future__ import annotations

from budgetlab.stories import lab8

REFUSED_AT = 100.0


def _question(calls: list[tuple[float, str]], etas: list[float]) -> lab8.Afternoon:
    question = lab8.Question(1, "limited", 1, 90.0)
    question.calls = [lab8.Call(at, behaviour, 10.0 if behaviour == "rate_limit" else None, "q-1")
                      for at, behaviour in calls]
    question.retries_sent = {eta: REFUSED_AT + 0.1 for eta in etas}
    afternoon = lab8.Afternoon()
    afternoon.questions.append(question)
    return afternoon


def test_a_retry_that_never_ran_is_judged_by_its_eta():
    """Rehearsal #13: a loaded worker never ran the retries, so the early ones went unjudged."""
    early = _question([(REFUSED_AT, "rate_limit")], [REFUSED_AT + 3.0])
    said = lab8.early_retries(early)
    assert said and "retry was due 3.0 s after a 429 that asked for 10 s" in said[0], said
    assert lab8.retry_delays(early) == {1: [3.0]}
    assert lab8.early_retries(_question([(REFUSED_AT, "rate_limit")], [REFUSED_AT + 10.5])) == []


def test_a_retry_that_ran_is_judged_by_its_eta_not_its_late_arrival():
    late_arrival = [(REFUSED_AT, "rate_limit"), (REFUSED_AT + 25.0, "ok")]
    assert lab8.early_retries(_question(late_arrival, [REFUSED_AT + 2.0])), "an early ETA hid behind a late call"
    assert lab8.early_retries(_question(late_arrival, [REFUSED_AT + 11.0])) == []


def test_a_retry_made_inside_the_task_is_judged_by_its_arrival():
    assert lab8.early_retries(_question([(REFUSED_AT, "rate_limit"), (REFUSED_AT + 4.0, "ok")], []))
    assert lab8.early_retries(_question([(REFUSED_AT, "rate_limit"), (REFUSED_AT + 10.0, "ok")], [])) == []
