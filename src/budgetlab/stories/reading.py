"""What several stories read the same way: a state waited on (never a sleep), a task's result and when it was stored (and every one stored), the "N of M" a job's message states, and a symptom that is the machine's."""

from __future__ import annotations

import datetime
import re
import time
import uuid
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

    `result` is an AsyncResult or a stored meta (StoredResults.of). Workers
    run on the lab clock, so this is production time: compare it with
    clock.production_time() of a wall instant, never with wall time.
    """
    done = result.get("date_done") if isinstance(result, dict) else result.date_done
    if done is None:
        return None
    if isinstance(done, str):
        done = datetime.datetime.fromisoformat(done)
    if done.tzinfo is None:  # Celery stores UTC, without saying so in every version
        done = done.replace(tzinfo=datetime.UTC)
    return done.timestamp()


class StoredResults:
    """Every result a Celery app's Redis backend stores for the tasks sent with its ids, in the order stored.

    The backend keeps one value a task, and a pool's master writes a hard
    limit's TimeLimitExceeded over the ending a child had stored (only a
    SUCCESS is kept: celery/backends/base.py, BaseKeyValueStoreBackend
    _store_result) when its timer fires before it has read that child's
    answer off the pool's pipe: a child between storing its ending and
    sending it, or a master kept waiting for a core. Reading the key
    afterwards shows the kill, not what the code did. The backend publishes
    every value it stores on the key's channel (celery/backends/redis.py,
    RedisBackend._set): subscribed before its task is sent, this sees both,
    in order (tests/pools/test_kill_after_ending.py, on a real worker).
    """

    def __init__(self, app) -> None:
        self._backend = app.backend
        self._pubsub = None
        self._stored: dict[str, list[dict]] = {}

    def __enter__(self) -> StoredResults:
        self._pubsub = self._backend.client.pubsub(ignore_subscribe_messages=True)
        return self

    def __exit__(self, *exc_info) -> None:
        self._pubsub.close()

    def new_id(self) -> str:
        """Return an id to send a task with (send_task's task_id), whose results this sees from now on.

        Channels are not per Redis database: only this check's own tasks are listened to.
        """
        task_id = str(uuid.uuid4())
        self._pubsub.subscribe(self._backend.get_key_for_task(task_id))
        return task_id

    def of(self, task_id: str) -> list[dict]:
        """Return the results stored for a task so far, oldest first, as the backend's metas (status, result,
        date_done); a result read off its key has been published before, so it is among them."""
        while self._pubsub.connection is not None and self._pubsub.connection.can_read(timeout=0):
            message = self._pubsub.get_message(timeout=0.0)
            if message is not None and message["type"] == "message":
                meta = self._decoded(message["data"])
                self._stored.setdefault(meta.get("task_id"), []).append(meta)
        return list(self._stored.get(task_id, ()))

    def _decoded(self, payload) -> dict:
        try:
            return self._backend.decode_result(payload)
        except Exception:  # noqa: BLE001 - an exception type the grader cannot rebuild: its name still says what
            meta = self._backend.decode(payload)
            failed = meta.get("result")
            if isinstance(failed, dict) and "exc_type" in failed:
                meta["result"] = type(str(failed["exc_type"]), (Exception,), {})(*failed.get("exc_message") or ())
            return meta


def counts_in(message: str) -> tuple[int, int] | None:
    """Return the (done, total) pair a message states, as in "timed out after 340 of 1,772 rows"."""
    match = COUNT.search(message)
    if not match:
        return None
    done, total = (int(re.sub(r"[,.]", "", group)) for group in match.groups())
    return done, total
