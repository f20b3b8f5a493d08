"""A tiny Celery app for the pool tests: tasks that declare both limits and outlive them.

`nap` naps in short slices (so gevent and eventlet, which patch
time.sleep, can switch greenlets between them) and reports how it ended:
"finished" when nothing stopped it, "soft" when SoftTimeLimitExceeded
reached it. A hard limit ends it from outside, as the task's result.
`late_word` fails at its soft limit and then lingers in its child past the
hard limit, after its ending is stored (see test_kill_after_ending.py).
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


class Lingering(app.Task):
    """A task whose child lingers after its ending is stored: Celery calls after_return once it has stored it."""

    def after_return(self, *args, **kwargs) -> None:
        time.sleep(NAP)


@app.task(name="pools.late_word", base=Lingering, soft_time_limit=SOFT, time_limit=HARD)
def late_word() -> None:
    time.sleep(NAP)  # its soft limit ends it: the child stores SoftTimeLimitExceeded, then lingers
