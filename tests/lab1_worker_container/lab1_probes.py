"""Probe tasks that the lab-1 graders send to each queue: they sleep and note when limits arrive.

A worker loads this module next to the lab's tasks. A probe notes its
start in Redis, sleeps a number of seconds and, when
SoftTimeLimitExceeded arrives, notes that moment too and sleeps on, so
that a hard limit, if there is one, kills it as well. The worker runs on
the lab clock, so the notes are production timestamps, comparable with
the result's and with the grader's wall instants converted by
clock.production_time; they survive the kill. The result of a probe that
finishes says how long it ran.
"""

from __future__ import annotations

import os
import time

import redis
from celery.exceptions import SoftTimeLimitExceeded

from kontor.celery_app import app


def _run(probe_id: str, seconds: float) -> dict:
    # No socket time-out: redis-py's default 5 s is 10 ms of wall time on the checks' clock, which a loaded
    # machine's loopback reply may exceed; a probe's note is the grader's, not the code under test.
    notes = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"], socket_timeout=None, socket_connect_timeout=None)
    # Notes outlive any check that reads them (the lease's database is emptied when it is released).
    keep = 30 * 86400
    started, started_at = time.monotonic(), time.time()

    def note_soft() -> float:
        notes.set(f"lab1probe:{probe_id}:soft", repr(time.time()), ex=keep)
        return time.monotonic() - started

    try:
        try:
            # The pool arms the timers when the child accepts the task, just before this runs: on a busy
            # machine a short soft limit (45 s is 90 ms of wall time on the checks' clock) may arrive while the start is noted.
            notes.set(f"lab1probe:{probe_id}:start", repr(started_at), ex=keep)
            time.sleep(seconds)
        except SoftTimeLimitExceeded:
            soft_at = note_soft()
            if seconds > soft_at:
                time.sleep(seconds - soft_at)
        ran = time.monotonic() - started
    except SoftTimeLimitExceeded:
        # A probe as long as its soft limit (1800 s on agent-batch) may finish its sleep a moment
        # before a timer that a busy machine delayed: the limit still arrived, just after the sleep.
        note_soft()
        ran = time.monotonic() - started
    return {"ran": ran}


@app.task(name="lab1probe.plain")
def plain(probe_id: str, seconds: float) -> dict:
    """A task with no limits of its own."""
    return _run(probe_id, seconds)


@app.task(name="lab1probe.decorated", soft_time_limit=200, time_limit=250)
def decorated(probe_id: str, seconds: float) -> dict:
    """A task that chose its own budget in the decorator: 200 s soft, 250 s hard."""
    return _run(probe_id, seconds)
