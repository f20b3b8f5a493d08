"""Hidden checks of lab 7: every file of an upload takes effect once, however often its message arrives.

Every sentence comes from budgetlab.stories.lab7, which builds it from what
the plan observed; tests/harness/test_lab7_symptoms.py reads each one.
"""

from __future__ import annotations

from budgetlab.harness.grading import MachineBusy
from budgetlab.stories import lab7


def _once_problem(outcome: lab7.Outcome) -> str:
    """What went wrong with the upload sent once, or '' when it took effect once."""
    effects, upload = outcome.effects, lab7.the_upload(outcome, "once")
    if not (outcome.ended and effects.status == "completed"):
        return f"{upload} {lab7.where_it_stands(outcome)} with {effects.items_done} of {effects.files} files done"
    if problem := lab7.repeated(outcome, "once"):
        return problem
    if effects.missing_files:
        return f"{upload} stored {len(effects.documents)} of {effects.files} receipts"
    if effects.letters != 1:
        return f"{upload} sent {effects.letters} letters"
    if effects.total_calls != effects.files:
        return f"{upload} billed {lab7.model_calls(effects.total_calls)} for its {effects.files} files"
    return ""


def test_an_upload_delivered_once_takes_effect_once(day):
    """A message delivered once stores every receipt once, bills every file once and sends one letter."""
    outcome = day.once
    problem = _once_problem(outcome)
    # A message the broker handed out again on its own was not delivered once: on a busy machine, with the
    # starter's hour, a rehearsal's upload of half an hour's calls came twice.
    machine = lab7.came_again_on_a_busy_machine(outcome, outcome.effects.files * day.file_seconds,
                                                day.visibility_timeout)
    if problem and machine:
        raise MachineBusy(f"{problem}; {machine}")
    assert not problem, problem


def test_a_second_delivery_while_the_first_run_works_changes_nothing(day):
    """A message the broker hands out again while its first run still works adds no receipt, bill or letter."""
    outcome = day.redelivered
    effects, upload = outcome.effects, lab7.the_upload(outcome, "redelivered")
    problem = lab7.repeated(outcome, "redelivered")
    assert not problem, problem
    assert outcome.ended and effects.status == "completed" and effects.missing_files == 0, (
        f"{upload} {lab7.where_it_stands(outcome)} with {len(effects.documents)} of {effects.files} receipts stored")
    assert effects.letters == 1, f"{upload} sent {effects.letters} letters"
    extra = effects.total_calls - effects.files
    assert extra <= 1, f"{upload} billed {lab7.model_calls(effects.total_calls)} for its {effects.files} files"


def test_two_deliveries_at_the_same_moment_do_not_both_run_the_job(day):
    """Two deliveries of one message that start at the same moment on two workers book every receipt once."""
    outcome = day.raced
    effects = outcome.effects
    problem = lab7.repeated(outcome, "raced")
    assert not problem, problem
    assert outcome.ended and effects.missing_files == 0 and effects.letters == 1, (
        f"{lab7.the_upload(outcome, 'raced')} {lab7.where_it_stands(outcome)} with {len(effects.documents)} of "
        f"{effects.files} receipts stored and {effects.letters} letters")


def test_a_job_whose_worker_is_killed_finishes_on_another_without_redoing_work(day):
    """An upload whose worker is SIGKILLed mid-job is finished by another worker, each file billed and stored once."""
    outcome = day.killed
    effects = outcome.effects
    if outcome.ended_before_kill:
        # The run ended before the point the kill waits for: the code's doing, unless it finished the whole job.
        assert outcome.ended and effects.status == "completed" and effects.missing_files == 0, (
            lab7.ended_before_the_kill(outcome))
        raise MachineBusy("the upload's first run finished every file before its worker could be killed mid-job "
                          "(is the machine very busy?)")
    # Duplicates first: a redone receipt is the symptom, however far the second run got when time ran out.
    problem = lab7.repeated(outcome, "killed")
    assert not problem, problem
    assert outcome.ended, lab7.killed_left_open(outcome)
    assert effects.status == "completed" and effects.missing_files == 0 and effects.letters == 1, (
        f"an upload whose worker was killed mid-job {lab7.where_it_stands(outcome)} with {len(effects.documents)} "
        f"of {effects.files} receipts stored and {effects.letters} letters")
    # The file in flight when the worker died may be asked again; the finished ones may not.
    assert effects.total_calls <= effects.files + 1, lab7.billed_again(outcome)
