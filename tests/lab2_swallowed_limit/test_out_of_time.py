"""Hidden checks of lab 2 for jobs too big for their budgets: a final state, the soft window, the helper."""

from __future__ import annotations

import importlib

from celery.exceptions import SoftTimeLimitExceeded

from budgetlab.stories.lab2 import BAD_ROWS, CUT, IMPORT, OVERSIZED
from budgetlab.stories.reading import counts_in


def test_a_job_out_of_time_ends_failed_and_says_how_far_it_got(workday):
    """A job stopped by the soft limit ends failed and says how far it got."""
    problems = []
    for spec in OVERSIZED:
        ending, unit = workday.endings[spec], spec.kind.unit
        written = len(ending.written)
        if not ending.final:
            problems.append(f"{ending.name} is still '{ending.status}' after its {spec.kind.hard} s hard limit, "
                            f"with {written:,} of {ending.items_total:,} {unit} written")
        elif ending.status != spec.kind.model.FAILED:
            problems.append(f"{ending.name} ran out of time but says '{ending.status}': '{ending.message}'")
        elif (counts := counts_in(ending.message)) is None:
            problems.append(f"{ending.name} ended failed with '{ending.message}', which does not say "
                            f"how many of its {ending.items_total:,} {unit} made it in")
        elif counts != (written, ending.items_total):
            problems.append(f"{ending.name} says '{ending.message}', but {written:,} of "
                            f"{ending.items_total:,} {unit} were written")
    stuck = sum(1 for spec in OVERSIZED if not workday.endings[spec].final)
    summary = f" ({len(OVERSIZED) - stuck} of {len(OVERSIZED)} jobs reached a final state)" if stuck else ""
    assert not problems, "; ".join(problems) + summary


def test_the_task_ends_inside_the_window_between_soft_and_hard_limit(workday):
    """A task that runs out of time fails with SoftTimeLimitExceeded before its hard limit, and no child is killed."""
    problems = []
    for spec in OVERSIZED:
        ending, hard = workday.endings[spec], spec.kind.hard
        if ending.state == "SUCCESS":
            problems.append(f"{ending.name}'s task reported SUCCESS although the job ran out of time")
        elif ending.exception == "TimeLimitExceeded":
            problems.append(f"{ending.name}'s task was killed at its {hard} s hard limit ({ending.result_text})")
        elif ending.state != "FAILURE":
            problems.append(f"{ending.name}'s task had not ended well after its {hard} s hard limit "
                            f"(state {ending.state})")
        elif ending.exception != "SoftTimeLimitExceeded":
            problems.append(f"{ending.name}'s task failed with {ending.result_text}, not with its soft limit")
    if workday.killed:
        problems.append(f"a hard limit ended {len(workday.killed)} of the worker's children")
    assert not problems, "; ".join(problems)


def test_the_model_helper_lets_the_time_limit_through(workday, monkeypatch):
    """A soft limit that fires inside a model call reaches the loop, in the helper itself and in the worker."""
    import kontor.clients

    helpers = importlib.import_module("lab2_swallowed_limit.model_calls")

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
