"""Probe tasks that the lab-1 graders send to each queue: they sleep on the lab clock and note when limits arrive.

A worker loads this module next to the lab's tasks. A probe notes its
start in Redis, sleeps a number of production seconds and, when
SoftTimeLimitExceeded arrives, notes that moment too and sleeps on, so
that a hard limit, if there is one, kills it as well. The notes survive
the kill; the result of a probe that finishes says how long it ran.
"""

from __future__ import annotations

import os
import time

import redis
from celery.exceptions import SoftTimeLimitExceeded

from budgetlab.inworker import clock
from kontor.celery_app import app


def _run(probe_id: str, seconds: float) -> dict:
    started = time.monotonic()
    notes = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"])

    def note_soft() -> float:
        soft_at = clock.to_production(time.monotonic() - started)
        notes.set(f"lab1probe:{probe_id}:soft", repr(soft_at), ex=3600)
        return soft_at

    try:
        try:
            # The pool armed the timers before this ran: on a busy machine a short soft limit
            # (45 s is 90 ms of wall time) may arrive while the start is noted, before the sleep.
            notes.set(f"lab1probe:{probe_id}:start", repr(time.time()), ex=3600)
            clock.sleep(seconds)
        except SoftTimeLimitExceeded:
            soft_at = note_soft()
            if seconds > soft_at:
                clock.sleep(seconds - soft_at)
        ran = clock.to_production(time.monotonic() - started)
    except SoftTimeLimitExceeded:
        # A probe as long as its soft limit (1800 s on agent-batch) may finish its sleep a moment
        # before a timer that a busy machine delayed: the limit still arrived, just after the sleep.
        note_soft()
        ran = clock.to_production(time.monotonic() - started)
    return {"ran": ran}


@app.task(name="lab1probe.plain")
def plain(probe_id: str, seconds: float) -> dict:
    """A task with no limits of its own."""
    return _run(probe_id, seconds)


@app.task(name="lab1probe.decorated", soft_time_limit=200, time_limit=250)
def decorated(probe_id: str, seconds: float) -> dict:
    """A task that chose its own budget in the decorator: 200 s soft, 250 s hard."""
    return _run(probe_id, seconds)
