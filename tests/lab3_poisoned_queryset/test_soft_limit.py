"""Hidden check of lab 3: a soft limit that fires in the middle of a sweep ends it there.

The overdue sweep drafts one notice per invoice with the model. Here every
model call is short except the one for the invoice at position 12, which
would take 2000 production seconds; the sweep is sent with a soft limit of
100 s (its own decorator allows an hour), so the limit fires during that
one call, with the invoices before it done and the rest untouched.
"""

from __future__ import annotations

import time

from sweep_bench import OVERDUE, Bench

SLOW_POSITION = 12
SOFT, HARD = 100, 400  # production seconds; the lab clock makes them 0.5 s and 2 s of wall time


def _plan(due) -> dict:
    return {"seed": 7, "model": {"default": 0.2, "keys": {f"invoice-{due.ids[SLOW_POSITION]}": 2000}}}


def test_a_soft_limit_in_the_middle_of_a_sweep_ends_it(target_dir, django_ready, tmp_path):
    """A soft limit that fires mid-sweep ends the task with SoftTimeLimitExceeded; no row after it is touched."""
    with Bench(target_dir, tmp_path, _plan) as bench:
        due = bench.due
        slow = due.ids[SLOW_POSITION]
        run = bench.run(OVERDUE, soft_time_limit=SOFT, time_limit=HARD)
        ended = bench.snapshot()
        time.sleep(0.3)  # the task has ended: give anything still running a chance to show itself
        later = bench.snapshot()
    assert run.state == "FAILURE" and run.error == "SoftTimeLimitExceeded", (
        f"the soft limit ({SOFT} s) fired while the model drafted the notice for {due.label(slow)}, "
        f"yet {run.ending()} instead of FAILURE with SoftTimeLimitExceeded")
    touched = [pk for pk in due.ids[SLOW_POSITION:] if later.status(pk) != "open"]
    assert not touched, (f"after its soft limit fired during {due.label(slow)}, the overdue sweep went on and "
                         f"marked {len(touched)} more invoices overdue, from {due.label(touched[0])} on")
    moved = later.changed_since(ended)
    assert not moved, f"{len(moved)} invoices still changed after the overdue sweep had ended: {due.labels(moved)}"
