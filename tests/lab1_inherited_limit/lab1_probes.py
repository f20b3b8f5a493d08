"""Probe tasks that the lab-1 graders send to each queue: they sleep on the lab clock and note when a limit arrives.

A worker loads this module next to the lab's tasks. A probe sleeps a
number of production seconds; when SoftTimeLimitExceeded arrives it
notes the moment and sleeps on, so that a hard limit, if there is one,
kills it too. Its result is {"soft_at": seconds or None, "ran": seconds}
in production seconds; the time of a hard kill is read from the result's
date_done against the start the probe noted in Redis.
"""

from __future__ import annotations

import os
import time

import redis
from celery.exceptions import SoftTimeLimitExceeded

from budgetlab import clock
from kontor.celery_app import app


def _run(probe_id: str, seconds: float) -> dict:
    started = time.monotonic()
    redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"]).set(f"lab1probe:{probe_id}:start", repr(time.time()), ex=600)
    soft_at = None
    try:
        clock.sleep(seconds)
    except SoftTimeLimitExceeded:
        soft_at = clock.to_production(time.monotonic() - started)
        remaining = seconds - soft_at
        if remaining > 0:
            clock.sleep(remaining)
    return {"soft_at": soft_at, "ran": clock.to_production(time.monotonic() - started)}


@app.task(name="lab1probe.plain")
def plain(probe_id: str, seconds: float) -> dict:
    """A task with no limits of its own."""
    return _run(probe_id, seconds)


@app.task(name="lab1probe.decorated", soft_time_limit=200, time_limit=250)
def decorated(probe_id: str, seconds: float) -> dict:
    """A task that chose its own budget: 200 s soft, 250 s hard."""
    return _run(probe_id, seconds)
