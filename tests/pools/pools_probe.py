"""A tiny Celery app for the pool tests: one task that declares both limits and outlives them.

The task naps in short slices (so gevent and eventlet, which patch
time.sleep, can switch greenlets between them) and reports how it ended:
"finished" when nothing stopped it, "soft" when SoftTimeLimitExceeded
reached it. A hard limit ends it from outside, as the task's result.
"""

import os
import time

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded

app = Celery("pools_probe", broker=os.environ["KONTOR_BROKER_URL"], backend=os.environ["KONTOR_BROKER_URL"])
app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"],
                broker_connection_retry_on_startup=True, worker_hijack_root_logger=True)

# Real seconds: this app has no lab clock. The nap outlasts both limits by a wide margin.
SOFT, HARD, NAP = 0.5, 1.5, 4.0


@app.task(name="pools.nap", soft_time_limit=SOFT, time_limit=HARD)
def nap() -> str:
    ends = time.monotonic() + NAP
    try:
        while time.monotonic() < ends:
            time.sleep(0.05)
    except SoftTimeLimitExceeded:
        return "soft"
    return "finished"
