"""What several stories read the same way: a state waited on (never a sleep), a task's result and when it was stored, the "N of M" a job's message states, and a symptom that is the machine's."""

from __future__ import annotations

import datetime
import re
import time
from collections.abc import Callable

# How often a wait looks again, in wall seconds: often enough that a check does not idle.
POLL = 0.02
COUNT = re.compile(r"(\d[\d,.]*)\s+of\s+(\d[\d,.]*)")


class Unmeasured(str):
    """A symptom that is the machine's, not the code's: what was measured was right, but came too late (or too
    early) to be timed. A check whose every symptom is one cannot grade (exit 2); see grading.faults_first."""


def wait_until(predicate: Callable[[], object], deadline: float, poll: float = POLL) -> bool:
    """Poll `predicate` until it holds or the monotonic `deadline` passes; return whether it held."""
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll)


def settled(result, timeout: float) -> bool:
    """Wait until a Celery result is stored (success, failure or a kill), by polling its state; return whether it was.

    Not `AsyncResult.get`: with several results pending it may consume
    another result's message and then idle a whole second on a result
    that is already stored, once per result.
    """
    return wait_until(result.ready, time.monotonic() + timeout)


def stored_at(result) -> float | None:
    """The timestamp at which the worker stored a settled result (for a hard kill: when it saw the kill).

    Workers run on the lab clock, so this is production time: compare it
    with clock.production_time() of a wall instant, never with wall time.
    """
    done = result.date_done
    if done is None:
        return None
    if isinstance(done, str):
        done = datetime.datetime.fromisoformat(done)
    if done.tzinfo is None:  # Celery stores UTC, without saying so in every version
        done = done.replace(tzinfo=datetime.UTC)
    return done.timestamp()


def counts_in(message: str) -> tuple[int, int] | None:
    """Return the (done, total) pair a message states, as in "timed out after 340 of 1,772 rows"."""
    match = COUNT.search(message)
    if not match:
        return None
    done, total = (int(re.sub(r"[,.]", "", group)) for group in match.groups())
    return done, total
