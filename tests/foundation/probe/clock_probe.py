"""A task that only waits on the lab clock, to see when the pool's time limits fire."""

import time

from celery.exceptions import SoftTimeLimitExceeded

from kontor.celery_app import app


@app.task(name="probe.linger", soft_time_limit=600, time_limit=900)
def linger(production_seconds: float, keep_going: bool, report_path: str | None = None) -> dict:
    """Sleep on the lab clock; report when the soft limit arrived, or ignore it when asked to.

    With report_path, the wall seconds at which the hard limit's SIGTERM
    arrived are written there: `finally` still runs before the SIGKILL.
    """
    from budgetlab.inworker import clock

    started = time.monotonic()
    try:
        clock.sleep(production_seconds)
    except SoftTimeLimitExceeded:
        soft_at = time.monotonic() - started
        if not keep_going:
            return {"soft_at_wall": soft_at}
        try:
            clock.sleep(production_seconds)
        finally:
            if report_path:
                with open(report_path, "w") as out:
                    out.write(f"{time.monotonic() - started}")
    return {"finished_wall": time.monotonic() - started}


@app.task(name="probe.stuck", soft_time_limit=10, time_limit=20)
def stuck() -> None:
    """Ignore the soft limit and wait until the hard limit kills the child."""
    from budgetlab.inworker import clock

    while True:
        try:
            clock.sleep(1000)
        except SoftTimeLimitExceeded:
            pass


@app.task(name="probe.now")
def now() -> float:
    """Return when this task started, on the machine's clock."""
    return time.time()
