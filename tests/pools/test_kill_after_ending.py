"""A prefork child killed at its hard limit after it had stored its ending: the kill is written over that ending.

The pool's master stores TimeLimitExceeded when it kills a child, over
whatever the child stored before unless that was a SUCCESS, so a task
whose child had ended it but had not yet told the master reads afterwards
as killed. Lab 2's checks read every result stored, in order
(stories.reading.StoredResults), to tell the two apart; this is that, on
a real worker, where the child lingers on purpose after its ending.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from budgetlab.harness.rig import Rig
from budgetlab.harness.workers import FAST_FLAGS, unique_hostname
from budgetlab.stories.reading import StoredResults, stored_at, wait_until

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.stack, pytest.mark.slow]


def test_a_kill_after_the_childs_own_ending_is_stored_over_it_and_both_are_seen(tmp_path):
    """The key ends up saying TimeLimitExceeded; the results stored say SoftTimeLimitExceeded first, then only that
    (the master stored it twice in every run seen here)."""
    with Rig(HERE, label="pools") as rig:
        queue = rig.queue()
        argv = [sys.executable, "-m", "celery", "-A", "pools_probe", "worker", "-P", "prefork", "-c", "1", "-Q", queue,
                "-n", unique_hostname("prefork"), "-l", "INFO", *FAST_FLAGS]
        with StoredResults(rig.client) as stored:
            tree = rig.start_worker([queue], [], argv=argv, log=tmp_path / "prefork.log",
                                    extra_env={"DJANGO_SETTINGS_MODULE": None, "BUDGETLAB_CLOCK": "1"})
            task_id = rig.client.send_task("pools.late_word", queue=queue, task_id=stored.new_id()).id
            wait_until(lambda: len(stored.of(task_id)) >= 2, time.monotonic() + 30)
            metas = stored.of(task_id)
            key_says = rig.client.AsyncResult(task_id).result
            # The master logs the kill a moment after it stores it.
            wait_until(tree.killed_children, time.monotonic() + 10)
            killed = tree.killed_children()
    said = [(meta["status"], type(meta["result"]).__name__) for meta in metas]
    assert said[0] == ("FAILURE", "SoftTimeLimitExceeded") and set(said[1:]) == {("FAILURE", "TimeLimitExceeded")}, said
    assert stored_at(metas[0]) < stored_at(metas[1]), [meta["date_done"] for meta in metas]
    assert type(key_says).__name__ == "TimeLimitExceeded", f"the result's key says {key_says!r}"
    assert len(killed) == 1, f"the worker's log names {len(killed)} children a hard limit ended"
