"""The one afternoon behind lab 6's checks: a threads-pool worker with the target's code meets a slow provider.

One worker runs with the lab's own settings (pool and concurrency as the
target chose them) against a real model service, driven through the
official openai client. The review starts while the provider is healthy,
five questions are asked, then the provider hangs and twelve more are
asked, then it recovers and twelve more are asked; then it hangs again
until the review has run out of budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from budgetlab.grading import could_not_start
from budgetlab.modelserver import ModelService
from budgetlab.rig import Rig, WorkerDidNotStart
from budgetlab.workers import unique_hostname


@dataclass
class Afternoon:
    """How every run ended, and how many calls the provider still held for the worker after the spell."""

    before: list  # Ending of each question asked while the provider was healthy
    during: list  # ... while it hung
    after: list  # ... once it had recovered
    review: object  # Ending of the month-end review
    held_after_spell: int  # calls the provider still held for a connected client once the spell's questions ended
    review_running: bool  # whether the review was still running at that moment


@pytest.fixture(scope="session")
def afternoon(target_dir, django_ready, tmp_path_factory) -> Afternoon:
    """Play the afternoon once with the target's code; every check reads its endings."""
    import lab6_grading as g  # loaded after the grading plugin has set Django up

    folder = tmp_path_factory.mktemp("lab6")
    with ModelService(folder, g.time_scale()) as service, Rig(target_dir, label="check") as rig, rig.django():
        service.set_mode("healthy", latency=g.HEALTHY_LATENCY)
        queue = rig.queue()
        try:
            rig.start_worker([queue], g.MODULES, settings_module=g.SETTINGS, log=folder / "worker.log",
                             argv=g.worker_argv(queue, unique_hostname("grader")),
                             extra_env={"KONTOR_MODEL_BASE_URL": service.base_url,
                                        "BUDGETLAB_CLOCK": str(g.time_scale())})
        except WorkerDidNotStart as exc:
            raise could_not_start(target_dir, exc) from None

        def ask(runs: list) -> list[float]:
            sent = []
            for run in runs:
                sent.append(time.time())
                rig.client.send_task(g.QUESTION_TASK, args=[run.pk], queue=queue)
            return sent

        def settle(runs: list, sent: list[float], promise: float, tolerance: float) -> list:
            """Wait until every run is final or well past its promise; read how each ended."""
            deadline = time.monotonic() + g.to_wall(promise + tolerance) + g.SLACK
            g.wait_until(lambda: g.all_final(*(run.pk for run in runs)), deadline)
            return [g.read_ending(run, at) for run, at in zip(runs, sent)]

        review = g.create_review()
        review_sent = time.time()
        review_deadline = time.monotonic() + g.to_wall(g.REVIEW_BUDGET + g.REVIEW_TOLERANCE) + g.SLACK
        rig.client.send_task(g.REVIEW_TASK, args=[review.pk], queue=queue)
        # The first task a fresh worker takes pays for its start-up; no question should.
        g.wait_until(lambda: g.has_started(review.pk), time.monotonic() + 10)
        runs = [g.create_question(n) for n in range(g.BEFORE)]
        before = settle(runs, ask(runs), g.PROMISE, g.TOLERANCE)

        service.set_mode("slow")
        runs = [g.create_question(n) for n in range(g.BEFORE, g.BEFORE + g.DURING)]
        during = settle(runs, ask(runs), g.PROMISE, g.TOLERANCE)
        # Every question of the spell has ended: a call the provider still holds is one nobody waits for,
        # except the review's own. Given the tolerance to let go of them, on the lab clock.
        review_running = not g.all_final(review.pk)
        g.wait_until(lambda: service.stats()["open"] <= int(not g.all_final(review.pk)),
                     time.monotonic() + g.to_wall(g.TOLERANCE) + g.SLACK / 2)
        held = service.stats()["open"] - int(not g.all_final(review.pk))

        service.set_mode("healthy", latency=g.HEALTHY_LATENCY)
        runs = [g.create_question(n) for n in range(g.BEFORE + g.DURING, g.BEFORE + g.DURING + g.AFTER)]
        after = settle(runs, ask(runs), g.PROMISE, g.TOLERANCE)

        # The provider relapses for the rest of the afternoon: more than the review has left of its budget.
        service.set_mode("slow")
        g.wait_until(lambda: g.all_final(review.pk), review_deadline)
        return Afternoon(before=before, during=during, after=after, review=g.read_ending(review, review_sent),
                         held_after_spell=max(held, 0), review_running=review_running)
