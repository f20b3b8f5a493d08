"""Hidden checks of lab 2 for jobs that fit their budgets: bad items stay isolated, good jobs still complete."""

from __future__ import annotations

from budgetlab.harness.grading import faults_first
from budgetlab.stories.lab2 import FITTING, WITH_BAD_ITEMS
from budgetlab.stories.reading import Unmeasured


def _not_completed(ending) -> str:
    """Say how a job that fits its budget did not complete; the machine's (Unmeasured) when it carried the job past
    its budget (lab2.Ending.overrun_unmeasured)."""
    if not ending.final:
        said = (f"{ending.name} is still '{ending.status}' after its {ending.kind.hard} s hard limit, "
                f"with {len(ending.written)} of {ending.items_total} {ending.kind.unit} written")
    else:
        said = f"{ending.name} ended '{ending.status}': '{ending.message}'"
    if ending.overrun_unmeasured():
        return Unmeasured(f"{said}, but {ending.waited_in_budget()} (is the machine very busy?)")
    return said


def test_bad_items_are_recorded_and_the_job_goes_on(workday):
    """A malformed row, an unreadable file or a failed step is recorded against that item, and the job completes."""
    problems = []
    for spec in WITH_BAD_ITEMS:
        ending, bad, unit = workday.endings[spec], spec.bad_items(), spec.kind.unit
        good = ending.items_total - len(bad)
        if ending.status != spec.kind.model.COMPLETED:
            problems.append(_not_completed(ending))
        elif ending.failed_items() != bad:
            problems.append(f"{ending.name} lists failures for {unit} {ending.failed_items()}, "
                            f"but the broken ones are {bad}")
        elif len(ending.written) != good:
            problems.append(f"{ending.name} wrote {len(ending.written)} of {ending.items_total} {unit}; "
                            f"{good} are good")
        elif ending.state != "SUCCESS":
            problems.append(f"{ending.name} completed, but its task ended {ending.state} ({ending.result_text})")
    problems = faults_first(problems)
    assert not problems, "; ".join(problems)


def test_a_job_that_fits_its_budget_completes_with_exact_counts(workday):
    """A job that finishes within its budget ends completed, with every item written and none failed."""
    problems = []
    for spec in FITTING:
        ending, unit = workday.endings[spec], spec.kind.unit
        if ending.status != spec.kind.model.COMPLETED:
            problems.append(_not_completed(ending))
        elif len(ending.written) != ending.items_total or ending.failures:
            problems.append(f"{ending.name} completed with {len(ending.written)} of {ending.items_total} "
                            f"{unit} written and {len(ending.failures)} failed")
        elif ending.state != "SUCCESS":
            problems.append(f"{ending.name} completed, but its task ended {ending.state} ({ending.result_text})")
    problems = faults_first(problems)
    assert not problems, "; ".join(problems)
