"""Hidden checks of lab 6's interactive assistant: the 45 s promise holds on the threads pool, slow provider or not."""

from __future__ import annotations

from budgetlab.harness.grading import faults_first
from budgetlab.stories.lab6 import (HELD_SECONDS, HELD_WRITES, PROMISE, TOLERANCE, TRY_AGAIN, answered, healthy_miss,
                                    held_late, late)


def test_questions_are_answered_while_the_provider_is_healthy(afternoon):
    """While the model answers at its usual pace, every question succeeds with an answer for each step, in time."""
    problems = []
    for ending in afternoon.before:
        if late(ending, PROMISE):
            problems.append(late(ending, PROMISE))
        elif not answered(ending):
            problems.append(healthy_miss(ending, f"{ending.name} ended '{ending.status}' ('{ending.message}') with "
                                         f"{ending.steps_stored} of {ending.steps_total} answers while the model "
                                         "was healthy", afternoon.before))
    problems = faults_first(problem for problem in problems if problem is not None)
    assert not problems, f"{len(problems)} of {len(afternoon.before)} questions: " + "; ".join(problems[:3])


def test_every_question_ends_within_the_promise_while_the_provider_hangs(afternoon):
    """While the model hangs, every question still ends within 45 s (+ tolerance): answered, or failed saying try again."""
    problems = []
    for ending in afternoon.during:
        if late(ending, PROMISE):
            problems.append(late(ending, PROMISE))
        elif ending.status == "failed" and not TRY_AGAIN.search(ending.message):
            problems.append(f"{ending.name} failed with '{ending.message}', which does not tell the person "
                            "to try again")
        elif ending.status == "succeeded" and ending.steps_stored != ending.steps_total:
            problems.append(f"{ending.name} ended 'succeeded' with only {ending.steps_stored} of "
                            f"{ending.steps_total} answers: the person gets an answer the model never gave")
    problems = faults_first(problems)
    assert not problems, (f"{len(problems)} of {len(afternoon.during)} questions asked while the model hung "
                          f"(promise {PROMISE:g} s, tolerance {TOLERANCE:g} s): " + "; ".join(problems[:3]))


def test_no_call_outlives_its_question_and_the_assistant_recovers(afternoon):
    """Once the slow spell's questions have ended, no thread still waits on the provider, and new questions succeed."""
    assert afternoon.held_after_spell == 0, (
        f"once the slow spell's questions were over or past their promise, the worker still held "
        f"{afternoon.held_after_spell} calls open to the model{' besides the review' if afternoon.review_running else ''}"
        f" {TOLERANCE:g} s later: threads waiting on answers nobody is waiting for")
    problems = faults_first(problem for problem in (
        late(e, PROMISE) or healthy_miss(e, f"{e.name} ended '{e.status}' ('{e.message}')", afternoon.after)
        for e in afternoon.after if late(e, PROMISE) or not answered(e)) if problem is not None)
    assert not problems, (f"{len(problems)} of {len(afternoon.after)} questions asked after the model recovered "
                          "were not answered in time: " + "; ".join(problems[:3]))


def test_a_question_whose_write_the_database_holds_still_ends(afternoon):
    """A question whose answer or whose ending the database holds past the promise still ends: answered, or failed saying try again."""
    problems = []
    for write, held in afternoon.held.items():
        ending = held.ending
        what = (f"the database held {HELD_WRITES[write]} for {HELD_SECONDS:g} s" if held.written
                else f"{HELD_WRITES[write].replace('its ', 'the ')} never reached the database")
        if missed := held_late(ending):  # keeps its kind (str, or Unmeasured for the machine's), for faults_first
            problems.append(type(missed)(f"{missed}; {what} (allowed: the promise, that hold and the tolerance of "
                                         f"{TOLERANCE:g} s)"))
        elif ending.status == "failed" and not TRY_AGAIN.search(ending.message):
            problems.append(f"{ending.name} failed with '{ending.message}' after {what}, which does not tell the "
                            "person to try again")
        elif ending.status != "failed" and not answered(ending):
            problems.append(f"{ending.name} ended '{ending.status}' ('{ending.message}') with "
                            f"{ending.steps_stored} of {ending.steps_total} answers after {what}")
    problems = faults_first(problems)
    assert not problems, "; ".join(problems)
