"""Hidden checks of lab 2 for jobs that fit their budgets: bad items stay isolated, good jobs still complete."""

from __future__ import annotations

from lab2_grading import AGENT, IMPORT, UPLOAD

# Small, fast jobs: every model call takes half a production second.
QUICK = {"seed": 7, "model": {"default": 0.5, "fail": ["step-3", "step-7"]},
         "ocr": {"default": 0.03, "fail": ["file-4", "file-9"]}}


def _not_completed(ending) -> str:
    if not ending.final:
        return (f"the {ending.name} is still '{ending.status}' after its {ending.kind.hard} s hard limit, "
                f"with {len(ending.written)} of {ending.items_total} {ending.kind.unit} written")
    return f"the {ending.name} ended '{ending.status}': '{ending.message}'"


def test_bad_items_are_recorded_and_the_job_goes_on(run_jobs):
    """A malformed row, an unreadable file or a failed step is recorded against that item, and the job completes."""
    bad_rows = [3, 17, 18, 40]
    endings = run_jobs([(IMPORT, 40, bad_rows), (IMPORT, 5, [1, 2, 3, 4, 5]), (UPLOAD, 12), (AGENT, 10)], QUICK)
    expected = [bad_rows, [1, 2, 3, 4, 5], [4, 9], [3, 7]]
    problems = []
    for ending, bad in zip(endings, expected):
        total = ending.items_total
        if ending.status != ending.kind.model.COMPLETED:
            problems.append(_not_completed(ending))
        elif ending.failed_items() != bad:
            problems.append(f"the {ending.name} lists failures for {ending.kind.unit} {ending.failed_items()}, "
                            f"but the broken ones are {bad}")
        elif len(ending.written) != total - len(bad):
            problems.append(f"the {ending.name} wrote {len(ending.written)} of {total} {ending.kind.unit}; "
                            f"{total - len(bad)} are good")
        elif ending.state != "SUCCESS":
            problems.append(f"the {ending.name} completed, but its task ended {ending.state} ({ending.result_text})")
    assert not problems, "; ".join(problems)


def test_a_job_that_fits_its_budget_completes_with_exact_counts(run_jobs):
    """A job that finishes within its budget ends completed, with every item written and none failed."""
    endings = run_jobs([(IMPORT, 120), (UPLOAD, 30), (AGENT, 20)], {**QUICK, "model": {"default": 0.5}, "ocr": {}})
    problems = []
    for ending in endings:
        total = ending.items_total
        if ending.status != ending.kind.model.COMPLETED:
            problems.append(_not_completed(ending))
        elif len(ending.written) != total or ending.failures:
            problems.append(f"the {ending.name} completed with {len(ending.written)} of {total} "
                            f"{ending.kind.unit} written and {len(ending.failures)} failures")
        elif ending.state != "SUCCESS":
            problems.append(f"the {ending.name} completed, but its task ended {ending.state} ({ending.result_text})")
    assert not problems, "; ".join(problems)
