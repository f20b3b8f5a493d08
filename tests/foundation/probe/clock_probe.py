"""Tasks that wait and read time the way production code does, to see the lab clock from inside a real worker."""

import asyncio
import datetime
import json
import os
import queue
import select
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

import redis
from celery.exceptions import SoftTimeLimitExceeded

from budgetlab.inworker.labtime import wall_monotonic
from kontor.celery_app import app


@app.task(name="probe.linger", soft_time_limit=600, time_limit=900)
def linger(seconds: float, keep_going: bool) -> dict:
    """Sleep; report when the soft limit arrived (production and wall seconds), or ignore it when asked to."""
    started, wall_started = time.monotonic(), wall_monotonic()
    try:
        time.sleep(seconds)
    except SoftTimeLimitExceeded:
        soft_at = {"soft_at": time.monotonic() - started, "soft_at_wall": wall_monotonic() - wall_started}
        if not keep_going:
            return soft_at
        time.sleep(seconds)
    return {"finished": time.monotonic() - started}


@app.task(name="probe.stuck", soft_time_limit=10, time_limit=20)
def stuck() -> None:
    """Ignore the soft limit and wait until the hard limit kills the child."""
    while True:
        try:
            time.sleep(1000)
        except SoftTimeLimitExceeded:
            pass


@app.task(name="probe.now")
def now() -> float:
    """Return when this task started, as the process reads time."""
    return time.time()


CHILD = "a child process's time.sleep"


def _waits(seconds: float) -> tuple:
    """Each way production code waits with a time-out, each given `seconds` and nothing that ends it sooner."""
    left, right = socket.socketpair()
    selector = selectors.DefaultSelector()
    selector.register(left, selectors.EVENT_READ)
    left.settimeout(seconds)
    condition = threading.Condition()

    def receive():
        try:
            left.recv(1)
        except socket.timeout:
            pass

    def get():
        try:
            queue.Queue().get(timeout=seconds)
        except queue.Empty:
            pass

    def condition_wait():
        with condition:
            condition.wait(seconds)

    def alarm():
        fired = threading.Event()
        previous = signal.signal(signal.SIGALRM, lambda *_: fired.set())
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            while not fired.is_set():
                signal.pause()
        finally:
            signal.signal(signal.SIGALRM, previous)

    def child():
        # Measured inside the child: its own start-up is not the wait being measured.
        code = ("import json, time; from budgetlab.inworker.labtime import wall_monotonic; "
                f"s, w = time.monotonic(), wall_monotonic(); time.sleep({seconds!r}); "
                "print(json.dumps([time.monotonic() - s, wall_monotonic() - w]))")
        return tuple(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                               text=True).stdout))

    sleeper = threading.Thread(target=threading.Event().wait, daemon=True)
    sleeper.start()
    # `right` stays open while they run: closed, it would make `left` readable at once.
    return right, {
        "time.sleep": lambda: time.sleep(seconds),
        "Event.wait": lambda: threading.Event().wait(seconds),
        "Condition.wait": condition_wait,
        "Queue.get": get,
        "Thread.join": lambda: sleeper.join(seconds),
        "select.select": lambda: select.select([left], [], [], seconds),
        "selectors": lambda: selector.select(seconds),
        "socket timeout": receive,
        "asyncio.sleep": lambda: asyncio.run(asyncio.sleep(seconds)),
        "signal.setitimer": alarm,
        CHILD: child,
    }


# Its own limits, far beyond its waits: the worker's flag would give it 120 s.
@app.task(name="probe.waits", soft_time_limit=3600, time_limit=3700)
def waits(seconds: float) -> dict:
    """Return, for each way of waiting, (production seconds by time.monotonic, wall seconds) it took."""
    measured = {}
    _peer, ways = _waits(seconds)
    for name, wait in ways.items():
        started, wall_started = time.monotonic(), wall_monotonic()
        own = wait()
        measured[name] = own if name == CHILD else (time.monotonic() - started, wall_monotonic() - wall_started)
    return measured


@app.task(name="probe.readings")
def readings() -> dict:
    """Return every clock production code reads, as Unix timestamps taken together, and the monotonic ones' pace."""
    from django.db import connection
    from django.utils import timezone

    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM now()), extract(epoch FROM clock_timestamp())")
        database_now, database_clock = cursor.fetchone()
    return {"time.time": time.time(), "datetime.now": datetime.datetime.now().timestamp(),
            "datetime.utcnow": datetime.datetime.utcnow().replace(tzinfo=datetime.timezone.utc).timestamp(),
            "timezone.now": timezone.now().timestamp(), "PostgreSQL now()": float(database_now),
            "PostgreSQL clock_timestamp()": float(database_clock), "date.today": datetime.date.today().isoformat()}


@app.task(name="probe.redis_expiry", soft_time_limit=20000, time_limit=21000)
def redis_expiry(seconds: float) -> dict:
    """Set a key that lives `seconds` with SET NX EX; report the production seconds until Redis no longer had it.

    The key is looked for every production second, so a busy machine can
    only make it look late, never early.
    """
    client = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"])
    key = f"probe:lease:{os.getpid()}:{time.monotonic()}"
    started = time.monotonic()
    client.set(key, "held", nx=True, ex=int(seconds))
    while client.exists(key):
        time.sleep(1.0)
    return {"lived": time.monotonic() - started}
