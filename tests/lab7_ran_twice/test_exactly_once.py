"""Hidden checks of lab 7: every file of an upload takes effect once, however often its message arrives."""

from __future__ import annotations

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories.lab7 import TAKEOVER, Outcome


def _duplicates(outcome: Outcome, how: str) -> str:
    """Return what was repeated or lost, in a customer's words, or '' when every file counted once."""
    effects = outcome.effects
    problems = []
    if effects.duplicated_files:
        problems.append(f"{len(effects.duplicated_files)} of its {effects.files} receipts were booked more than "
                        f"once (e.g. {effects.duplicated_files[0]} {effects.documents[effects.duplicated_files[0]]}x)")
    # Two letters are a duplicate however far the runs got; none is a loss only once the job ended.
    if effects.letters > 1 or (effects.letters == 0 and outcome.ended):
        problems.append(f"the customer got {effects.letters} letters")
    if not problems:
        return ""
    return f"an upload whose message {how} (delivered {outcome.deliveries}x): " + ", ".join(problems)


def test_an_upload_delivered_once_takes_effect_once(day):
    """A message delivered once stores every receipt once, bills every file once and sends one letter."""
    outcome = day.once
    effects = outcome.effects
    assert outcome.ended and effects.status == "completed", (
        f"an upload delivered once ended '{effects.status}' with {effects.items_done} of {effects.files} files done")
    assert not _duplicates(outcome, "came once"), _duplicates(outcome, "came once")
    assert effects.missing_files == 0, f"an upload delivered once stored {len(effects.documents)} of {effects.files} receipts"
    assert effects.letters == 1, f"an upload delivered once sent {effects.letters} letters"
    assert effects.total_calls == effects.files, (
        f"an upload of {effects.files} files delivered once billed {effects.total_calls} model calls")


def test_a_second_delivery_while_the_first_run_works_changes_nothing(day):
    """A message the broker hands out again while its first run still works adds no receipt, bill or letter."""
    outcome = day.redelivered
    effects = outcome.effects
    problem = _duplicates(outcome, "was handed out again while its first run still worked")
    assert not problem, problem
    assert outcome.ended and effects.status == "completed" and effects.missing_files == 0, (
        f"an upload delivered twice ended '{effects.status}' with {len(effects.documents)} of {effects.files} "
        f"receipts stored")
    assert effects.letters == 1, f"an upload delivered twice sent {effects.letters} letters"
    extra = effects.total_calls - effects.files
    assert extra <= 1, f"an upload of {effects.files} files delivered twice billed {effects.total_calls} model calls"


def test_two_deliveries_at_the_same_moment_do_not_both_run_the_job(day):
    """Two deliveries of one message that start at the same moment on two workers book every receipt once."""
    outcome = day.raced
    effects = outcome.effects
    problem = _duplicates(outcome, "reached two idle workers at the same moment")
    assert not problem, problem
    assert outcome.ended and effects.missing_files == 0 and effects.letters == 1, (
        f"an upload delivered to two workers at once ended '{effects.status}' with {len(effects.documents)} of "
        f"{effects.files} receipts stored and {effects.letters} letters")


def test_a_job_whose_worker_is_killed_finishes_on_another_without_redoing_work(day):
    """An upload whose worker is SIGKILLed mid-job is finished by another worker, each file billed and stored once."""
    outcome = day.killed
    effects = outcome.effects
    if outcome.ended_before_kill:
        # The run ended before the point the kill waits for: the code's doing, unless it finished the whole job.
        assert outcome.ended and effects.status == "completed" and effects.missing_files == 0, (
            f"an upload's run ended after {effects.total_calls} model calls and left it '{effects.status}' with "
            f"{len(effects.documents)} of {effects.files} receipts stored: nothing finished it, and no worker was "
            "still working on it to be killed")
        raise CouldNotGrade("the upload's first run finished every file before its worker could be killed mid-job "
                            "(is the machine very busy?)")
    # Duplicates first: a redone receipt is the symptom, however far the second run got when time ran out.
    problem = _duplicates(outcome, "came again after its worker was killed")
    assert not problem, problem
    taken_over = ("another worker took it over but had not finished" if outcome.deliveries > 1
                  else "no other worker took it over")
    assert outcome.ended, (
        f"an upload whose worker was killed mid-job was still '{effects.status}' {TAKEOVER // 3600} production hours "
        f"later, with {len(effects.documents)} of {effects.files} receipts stored: {taken_over}")
    assert effects.status == "completed" and effects.missing_files == 0 and effects.letters == 1, (
        f"an upload taken over after a kill ended '{effects.status}' with {len(effects.documents)} of "
        f"{effects.files} receipts stored and {effects.letters} letters")
    # The file in flight when the worker died may be asked again; the finished ones may not.
    assert effects.total_calls <= effects.files + 1, (
        f"an upload of {effects.files} files taken over after a kill billed {effects.total_calls} model calls: "
        f"the new run asked the model again about files the killed run had finished")
