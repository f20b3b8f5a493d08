"""Other work that keeps a worker child busy until a moment the story names: a busy worker's queue (lab 8).

Loaded into the worker next to the target's modules (KONTOR_TASK_MODULES).
Each `hold` notes its start in the broker's own Redis database, so that
the story can wait until every child is taken (a state, not a sleep). It
then blocks, using no CPU, until the story names the production moment
the holds end, and sleeps until then on the worker's own clock: a busy
machine may delay the story, never the moment the children come free.
"""

from __future__ import annotations

import time

import redis
from celery import shared_task

TASK = "budgetlab.busy.hold"
# Both in the broker's database, which the rig leases to one check and empties afterwards.
STARTED_KEY = "budgetlab:busy:started"   # how many holds have started
RELEASE_KEY = "budgetlab:busy:release"   # one item a hold: the production timestamp it ends at
# A hold the story never names a moment for (it ended early) frees its child after this many seconds.
LONGEST = 120


@shared_task(name=TASK)
def hold() -> None:
    """Keep this child busy until the production moment the story names (at most LONGEST seconds of waiting)."""
    from kontor.celery_app import app

    # No socket time-out: the URL's own would end the wait long before the story names the moment.
    with redis.Redis.from_url(app.conf.broker_url, socket_timeout=None) as client:
        client.incr(STARTED_KEY)
        named = client.blpop([RELEASE_KEY], timeout=LONGEST)
    if named:
        time.sleep(max(0.0, float(named[1]) - time.time()))
