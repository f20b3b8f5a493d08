"""Notes, in the broker's own Redis database, every task message a process sends: which, when it is due, when it left.

Lab 8 judges how long a retry chose to wait: a message's ETA less the
moment its code sent it. Read from Redis later, that moment would carry
whatever delay a busy machine added to the reader; noted by the sender
as the message leaves, on the process's own (lab) clock, it does not.
Imported by the processes that run the target's code (the worker through
KONTOR_TASK_MODULES, the web process by name); nothing else sends a note.
"""

from __future__ import annotations

import json
import time

import redis
from celery.signals import before_task_publish

# One list per broker database; the rig leases that database to one check and empties it afterwards.
KEY = "budgetlab:published"

_clients: dict[str, redis.Redis] = {}


@before_task_publish.connect(weak=False)
def _note(sender=None, body=None, headers=None, **_) -> None:
    from kontor.celery_app import app

    url = app.conf.broker_url
    client = _clients.get(url) or _clients.setdefault(url, redis.Redis.from_url(url, socket_timeout=None))
    args, kwargs = (body[0], body[1]) if isinstance(body, (list, tuple)) and len(body) >= 2 else ((), {})
    client.rpush(KEY, json.dumps({"task": sender, "id": (headers or {}).get("id"),
                                  "retries": (headers or {}).get("retries"), "eta": (headers or {}).get("eta"),
                                  "args": list(args), "kwargs": dict(kwargs), "at": time.time()}, default=str))
