"""The one run behind lab 2's checks: ten jobs on one real worker, three of them too big for their budgets."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

import pytest
from django.db import connections

from budgetlab import database
from budgetlab.grading import CouldNotGrade
from budgetlab.stack.leases import RedisLease
from budgetlab.workers import Environment, WorkerTree, celery_argv, unique_hostname

# Three children for the oversized jobs, two for the seven small ones.
CONCURRENCY = 5


@dataclass
class Workday:
    """How every job and its task ended, and which worker children the hard limit killed."""

    endings: dict  # Spec -> Ending
    killed: list[int]


@pytest.fixture(scope="session")
def workday(target_dir, django_ready, tmp_path_factory) -> Workday:
    """Run every job of the checks at once on one worker with the target's code; read how each ended.

    Everything is stopped and dropped before the checks look at the result,
    so the checks compare plain values and share one run of a few seconds.
    """
    # Imported here: this file loads before the grading plugin has set Django up.
    from celery import Celery

    from lab2_grading import (FITTING, MODULES, OVERSIZED, WITH_BAD_ITEMS, create_job, hard_deadline, latency_plan,
                              read_ending, wait_until)

    url = database.scratch_database("check")
    name = url.rsplit("/", 1)[1]
    connection = connections["default"]
    connection.close()
    previous = connection.settings_dict["NAME"]
    connection.settings_dict["NAME"] = name
    folder = tmp_path_factory.mktemp("lab2")
    tree = app = lease = None
    try:
        jobs = {spec: create_job(spec) for spec in (*OVERSIZED, *WITH_BAD_ITEMS, *FITTING)}
        lease = RedisLease()
        broker = lease.url
        plan = folder / "plan.json"
        plan.write_text(json.dumps(latency_plan()))
        queue = f"check-{uuid.uuid4().hex[:8]}"
        env = Environment(target_dir=target_dir, database_url=url, broker_url=broker, modules=MODULES,
                          latency_plan=plan)
        tree = WorkerTree(celery_argv([queue], unique_hostname("grader"), CONCURRENCY), env, folder / "worker.log")
        try:
            tree.start()
        except Exception as exc:
            raise CouldNotGrade(f"the worker did not start with the {target_dir.name} code: {exc}") from None
        app = Celery("grader", broker=broker, backend=broker, set_as_current=False)
        app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
        sent_at = time.monotonic()
        results = {spec: app.send_task(spec.kind.task, args=[job.pk], queue=queue) for spec, job in jobs.items()}
        wait_until(lambda: all(r.ready() for r in results.values()), hard_deadline(sent_at))
        hard_limited = sum(1 for r in results.values()
                           if r.ready() and type(r.result).__name__ == "TimeLimitExceeded")
        # The pool logs a SIGKILL a moment after it reports the hard limit; give the log time to catch up.
        wait_until(lambda: len(tree.killed_children()) >= hard_limited, time.monotonic() + 2)
        endings = {spec: read_ending(spec, job, results[spec]) for spec, job in jobs.items()}
        return Workday(endings=endings, killed=tree.killed_children())
    finally:
        if tree is not None:
            # Every task has ended or been given up on: no need for Celery's slow warm shutdown.
            tree.kill()
        if app is not None:
            app.close()
        if lease is not None:
            lease.release()
        connection.close()
        connection.settings_dict["NAME"] = previous
        database.drop(name)
