"""Hidden checks of lab 2 for jobs out of time: a final state, the soft window, the helper.

Out of time are the jobs too big for their budgets, whose soft limit lands in
a model call, and the landing jobs, held at one database write until it
lands there: a statement of an item's work, the handler of a failed item,
the final write (budgetlab.stories.lab2.LANDINGS).
"""

from __future__ import annotations

import importlib

from celery.exceptions import SoftTimeLimitExceeded

from budgetlab.harness.grading import faults_first
from budgetlab.stories.lab2 import BAD_ROWS, CUT, FITTING, IMPORT, LANDINGS, OVERSIZED, WITH_BAD_ITEMS
from budgetlab.stories.reading import Unmeasured, counts_in

OUT_OF_TIME = (*OVERSIZED, *LANDINGS)
FITS = (*WITH_BAD_ITEMS, *FITTING)


# The symptoms a check lists in full; beyond them it counts the rest, which are like them.
SHOWN = 4


def _said(problems: list[str]) -> str:
    more = len(problems) - SHOWN
    rest = f"; and {more} more job{'s' if more > 1 else ''} like them" if more > 0 else ""
    return "; ".join(problems[:SHOWN]) + rest


def _out_of_time(workday) -> list:
    """The specs of the jobs that ran out of time: a landing job only when its code reached the held write."""
    return [spec for spec in OUT_OF_TIME if not spec.landing or workday.endings[spec].landed]


def _name(ending) -> str:
    """The job's name, with where its soft limit landed when a check put it there."""
    where = ending.spec.where() if ending.landed else ""
    return f"{ending.name} (its soft limit landed {where})" if where else ending.name


def _counts_allowed(spec, written: int) -> tuple[int, ...]:
    """The item counts a job's message may state, `written` items being in the database.

    A job too big for its budget is meant to meet its limit in the model call
    at its cut; on a busy machine its time can run out earlier, inside some
    item's work, and then also between that item's write and the write that
    counts it (a reference solution's count was one short so, once, in a
    rehearsal under load). One short is then what a correct fix says too.
    """
    if spec.landing:
        return (written,)
    return (written,) if written >= spec.written_by_the_cut() else (written, written - 1)


def _killed_after_it_ended(ending, waited: str) -> tuple[str, str]:
    """Say how a task whose child had stored its own ending was killed at its hard limit all the same, and the
    symptom: the machine's when the ending came inside the limit (the worker's master read it too late) or, later,
    when the worker `waited` for a core long enough to have been carried there ("": it did not)."""
    hard, at = ending.kind.hard, ending.ended_before_kill
    said_as = (f"{_name(ending)}'s task was killed at its {hard} s hard limit after it had ended "
               f"({ending.result_text or ending.state}, {at:.0f} s after the job started)")
    if at < hard:
        return said_as, Unmeasured(f"{said_as}: the worker's master had not read that ending when the limit came "
                                   "(is the machine very busy?)")
    return said_as, Unmeasured(f"{said_as}, but {waited} (is the machine very busy?)") if waited else said_as


def test_a_job_out_of_time_ends_failed_and_says_how_far_it_got(workday):
    """A job stopped by the soft limit ends failed and says how far it got, wherever the limit lands."""
    problems, shown, out = [], [], _out_of_time(workday)  # each symptom, and how a failing check states it
    for spec in out:
        ending, unit = workday.endings[spec], spec.kind.unit
        written = len(ending.written)
        # Killed while the worker waited for a core between its limits (as the next check judges a kill).
        machine = ending.exception == "TimeLimitExceeded" and ending.kill_unmeasured()
        if not ending.final:
            said = (f"{_name(ending)} is still '{ending.status}' after its {spec.kind.hard} s hard limit, "
                    f"with {written:,} of {ending.items_total:,} {unit} written")
        elif ending.status != spec.kind.model.FAILED:
            said = f"{_name(ending)} ran out of time but says '{ending.status}': '{ending.message}'"
        elif (counts := counts_in(ending.message)) is None:
            said = (f"{_name(ending)} ended failed with '{ending.message}', which does not say "
                    f"how many of its {ending.items_total:,} {unit} made it in")
        elif counts not in {(done, ending.items_total) for done in _counts_allowed(spec, written)}:
            said = (f"{_name(ending)} says '{ending.message}', but {written:,} of {ending.items_total:,} {unit} "
                    "were written")
        else:
            continue
        shown.append(said)
        problems.append(Unmeasured(f"{said}, its task killed at its hard limit while {ending.waited_between_limits()} "
                                   "(is the machine very busy?)") if machine and not ending.final else said)
    stuck = sum(1 for spec in out if not workday.endings[spec].final)
    summary = f" ({len(out) - stuck} of {len(out)} jobs reached a final state)" if stuck else ""
    # Only jobs the machine may have kept from ending: could not grade (faults_first raises). Beside a fault of the
    # code's, they are listed as what was seen, as the next check lists its kills.
    said = _said(shown) + summary if faults_first(problems) else ""
    assert not said, said


def test_the_task_ends_inside_the_window_between_soft_and_hard_limit(workday):
    """A task that runs out of time fails with SoftTimeLimitExceeded before its hard limit, and no child is killed."""
    problems, shown = [], []  # each symptom, and how a failing check states it (a kill as what it was)
    for spec in _out_of_time(workday):
        ending, hard = workday.endings[spec], spec.kind.hard
        symptom = said_as = None
        if ending.state == "SUCCESS":
            symptom = f"{_name(ending)}'s task reported SUCCESS although the job ran out of time"
        elif ending.exception == "TimeLimitExceeded":
            said_as = f"{_name(ending)}'s task was killed at its {hard} s hard limit ({ending.result_text})"
            symptom = (Unmeasured(f"{said_as}, but {ending.waited_between_limits()} (is the machine very busy?)")
                       if ending.kill_unmeasured() else said_as)
        elif ending.state != "FAILURE":
            symptom = f"{_name(ending)}'s task had not ended well after its {hard} s hard limit (state {ending.state})"
        elif ending.exception != "SoftTimeLimitExceeded":
            symptom = f"{_name(ending)}'s task failed with {ending.result_text}, not with its soft limit"
        elif ending.ended_before_kill is not None:
            said_as, symptom = _killed_after_it_ended(ending,
                                                      ending.kill_unmeasured() and ending.waited_between_limits())
        if symptom:
            problems.append(symptom)
            shown.append(said_as or symptom)
    # A job that fits its budget, killed after a busy machine carried it past its budget (test_within_budget says
    # how it ended), is one more kill the machine may have caused.
    for spec in FITS:
        ending = workday.endings[spec]
        if ending.exception == "TimeLimitExceeded" and ending.overrun_unmeasured():
            problems.append(Unmeasured(f"{ending.name}'s task, which fits its budget, was killed at its "
                                       f"{spec.kind.hard} s hard limit, but {ending.waited_in_budget()} "
                                       "(is the machine very busy?)"))
        elif ending.ended_before_kill is not None:
            said_as, symptom = _killed_after_it_ended(ending, ending.overrun_unmeasured() and ending.waited_in_budget())
            problems.append(symptom)
            shown.append(said_as)
    # Kills the machine may have caused, and nothing else: could not grade (faults_first raises). Beside a
    # fault of the code's, such a kill is listed as what it was: how busy the machine was must not change
    # what a failing check says.
    said = [_said(shown)] if faults_first(problems) else []
    if workday.killed:
        said.append(f"a hard limit ended {len(workday.killed)} of the worker's children")
    assert not said, "; ".join(said)


def test_the_model_helper_lets_the_time_limit_through(workday, monkeypatch):
    """A soft limit that fires inside a model call reaches the loop, in the helper itself and in the worker."""
    import kontor.clients

    helpers = importlib.import_module("lab2_batch_jobs.model_calls")

    def model_out_of_time(prompt, *, key):
        raise SoftTimeLimitExceeded()

    monkeypatch.setattr(kontor.clients, "model_complete", model_out_of_time)
    if hasattr(helpers, "model_complete"):
        monkeypatch.setattr(helpers, "model_complete", model_out_of_time)
    try:
        outcome = f"returned {helpers.ask_model('Category code for a payment to Telekom: phone 1234', key='row-1')!r}"
    except SoftTimeLimitExceeded:
        outcome = ""
    except Exception as exc:
        outcome = f"raised {exc!r}"
    assert not outcome, (f"ask_model() {outcome} when the soft limit fired inside the model call: "
                         "the time limit never left the helper")

    problems = []
    for spec in OVERSIZED:
        ending, cut, kind = workday.endings[spec], CUT[spec.kind], spec.kind
        if kind is IMPORT:
            before = cut - 1 - sum(1 for row in BAD_ROWS if row < cut)
            went_on = len(ending.written) > before
            detail = f"{len(ending.written):,} rows written, {before} of them before row {cut}"
        else:
            after = [n for n in ending.written if n >= cut]
            went_on = bool(after)
            detail = f"{len(after)} {kind.unit} written from {kind.item} {cut} on"
        if went_on:
            problems.append(f"{kind.item} {cut}'s model call was still running when the soft limit fired, "
                            f"yet {ending.name} went on: {detail}")
    assert not problems, "; ".join(problems)
