"""A probe task for the Celery version tests: it sleeps and reports the message's time limits.

It declares no limits of its own, so whatever limit it meets comes from
the worker, the settings or the message. It returns the `timelimit`
header as the worker received it, and when SoftTimeLimitExceeded arrived.
"""

from __future__ import annotations

import time

from celery.exceptions import SoftTimeLimitExceeded

from kontor.celery_app import app


@app.task(name="versions.probe", bind=True)
def probe(self, seconds: float) -> dict:
    """Sleep `seconds`; say when the soft limit arrived, if it did."""
    started = time.monotonic()
    soft_at = None
    try:
        time.sleep(seconds)
    except SoftTimeLimitExceeded:
        soft_at = time.monotonic() - started
    return {"timelimit": self.request.timelimit, "soft_at": soft_at}
