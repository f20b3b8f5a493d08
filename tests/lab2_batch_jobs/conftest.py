"""The one run behind lab 2's checks: every job on one real worker, some too big for their budgets, some held at
one database write until their soft limits land there (budgetlab.stories.lab2.LANDINGS), the rest fitting."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from budgetlab.harness import stalls
from budgetlab.harness.grading import could_not_start
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.stories.lab2 import (FITTING, LANDINGS, MODULES, OVERSIZED, WITH_BAD_ITEMS, create_job,
                                    hard_deadline, killed_by, latency_plan, read_ending, stall_of)
from budgetlab.stories.reading import StoredResults, wait_until
from budgetlab.stories.stallmeter import DatabaseBackends, StallMeter

# Three children for the oversized jobs, one for each landing job, two for the seven small ones.
CONCURRENCY = len(OVERSIZED) + len(LANDINGS) + 2


@dataclass
class Workday:
    """How every job and its task ended, and which worker children the hard limit killed."""

    endings: dict  # Spec -> Ending
    killed: list[int]


@pytest.fixture(scope="session")
def workday(target_dir, stack_ready, tmp_path_factory) -> Workday:
    """Run every job of the checks at once on one worker with the target's code; read how each ended.

    Everything is stopped and dropped before the checks look at the result,
    so the checks compare plain values and share one run of a few seconds.
    """
    folder = tmp_path_factory.mktemp("lab2")
    with Rig(target_dir, label="check") as rig, rig.django(), DatabaseBackends(rig.database_url) as backends, \
            StallMeter() as meter, StoredResults(rig.client) as stored:
        queue = rig.queue()
        # The jobs are written while the worker boots: nothing runs before they are sent.
        tree = rig.start_worker([queue], MODULES, CONCURRENCY, latency_plan=latency_plan(), log=folder / "worker.log",
                                wait=False)
        # The jobs that meet their limits first, so that each has a child from the start.
        jobs = {spec: create_job(spec) for spec in (*OVERSIZED, *LANDINGS, *WITH_BAD_ITEMS, *FITTING)}
        held = {spec: stall_of(spec, jobs[spec]) for spec in LANDINGS}
        stalls.install(list(held.values()))
        try:
            rig.ready(tree)
        except WorkerDidNotStart as exc:
            raise could_not_start(target_dir, exc) from None
        # A job's items pass between its child and a database backend: a core either waited for delays it.
        meter.watch(tree.pids, backends.pids)
        sent_at = time.monotonic()
        results = {spec: rig.client.send_task(spec.kind.task, args=[job.pk], queue=queue, task_id=stored.new_id())
                   for spec, job in jobs.items()}
        wait_until(lambda: all(r.ready() for r in results.values()), hard_deadline(sent_at))
        # A held write whose code never gave up its connection (a second one written on instead) ends here.
        stalls.release()
        hard_limited = sum(1 for r in results.values() if any(map(killed_by, stored.of(r.id))))
        # The pool logs a SIGKILL a moment after it stores the hard limit; give the log time to catch up.
        wait_until(lambda: len(tree.killed_children()) >= hard_limited, time.monotonic() + 2)
        # The kills first: each one's hard limit was stored before it was logged, so the endings read next know it.
        killed = tree.killed_children()
        endings = {spec: read_ending(spec, job, results[spec], landed=spec in held and stalls.fired(held[spec]),
                                     meter=meter, stored=stored.of(results[spec].id))
                   for spec, job in jobs.items()}
        # Leaving the block kills the worker at once: every task has ended or been given up on.
        return Workday(endings=endings, killed=killed)
