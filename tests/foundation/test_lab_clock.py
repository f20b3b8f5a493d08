"""The lab-clock pool fires real limits at scaled wall time and reports production seconds."""

import time

import pytest

from budgetlab.inworker import clock
from budgetlab.stories.reading import settled, stored_at

PROBE = str(__import__("pathlib").Path(__file__).parent / "probe")
# Two cores shared with the worker: the limit may fire a little late, never early.
LATE = 0.25


@pytest.fixture
def probe_worker(start_worker, queue_name):
    return start_worker([queue_name], ["clock_probe"], concurrency=2, extra_env={"PYTHONPATH": PROBE},
                        extra_args=["--soft-time-limit", "120"])


@pytest.mark.external
def test_soft_limit_fires_at_the_scaled_budget(probe_worker, celery_client, queue_name):
    """A 600 s soft limit fires after 600 x factor wall seconds."""
    result = celery_client.send_task("probe.linger", args=[5000, False], queue=queue_name)
    soft_at = result.get(timeout=30)["soft_at_wall"]
    budget = clock.to_wall(600)
    assert budget <= soft_at + 0.005 < budget + LATE, f"soft limit fired after {soft_at:.3f} s wall, budget {budget:.3f} s"


@pytest.mark.external
def test_hard_limit_kills_and_reports_production_seconds(probe_worker, celery_client, queue_name):
    """A task that ignores its soft limit is killed at 900 production seconds and the caller sees TimeLimitExceeded(900)."""
    started = time.monotonic()
    result = celery_client.send_task("probe.linger", args=[5000, True], queue=queue_name)
    result.get(timeout=30, propagate=False)
    elapsed = time.monotonic() - started
    assert result.state == "FAILURE"
    assert type(result.result).__name__ == "TimeLimitExceeded", f"caller saw {result.result!r}"
    assert result.result.args[0] == pytest.approx(900), f"caller saw {result.result!r}, expected production seconds"
    assert elapsed >= clock.to_wall(900), f"killed after {elapsed:.3f} s wall, before the hard limit"
    deadline = time.monotonic() + 5
    while not probe_worker.killed_children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert probe_worker.killed_children(), "no pool child was SIGKILLed at the hard limit"
    assert "Hard time limit (900.0s) exceeded" in probe_worker.text()


def test_inspect_shows_pool_defaults_in_production_seconds(probe_worker, celery_client):
    """inspect().stats() reports the worker flag's 120 s, not the scaled wall value."""
    stats = celery_client.control.inspect(timeout=3).stats() or {}
    pools = [worker["pool"] for worker in stats.values()]
    assert pools, "the worker did not answer inspect().stats()"
    assert pools[0]["timeouts"][0] == 120
    assert pools[0]["lab-clock"] == clock.factor()


# After a hard kill the pool must replace the child and start the next task within this many
# production seconds; Celery's own 5 s supervisor tick would be 1,000 of them at 200x.
REPLACED_WITHIN = 150


def test_the_next_task_starts_soon_after_a_hard_kill(start_worker, celery_client, queue_name):
    """With one child, the task queued behind a killed one starts within 150 production seconds of the kill, every time."""
    start_worker([queue_name], ["clock_probe"], concurrency=1, extra_env={"PYTHONPATH": PROBE})
    for round_ in range(4):
        killed = celery_client.send_task("probe.stuck", queue=queue_name)
        after = celery_client.send_task("probe.now", queue=queue_name)
        assert settled(after, 30), f"round {round_ + 1}: the task behind the killed one never ran"
        assert type(killed.result).__name__ == "TimeLimitExceeded", f"round {round_ + 1}: {killed.result!r}"
        waited = clock.to_production(after.result - stored_at(killed))
        assert waited <= REPLACED_WITHIN, (f"round {round_ + 1}: the next task started {waited:.0f} production seconds "
                                           "after the hard kill")
