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
from collections.abc import Callable

import redis
from celery.exceptions import SoftTimeLimitExceeded

from budgetlab.inworker.labtime import installed, wall_monotonic, wall_time
from kontor.celery_app import app

CLOCK = installed()


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
# Waits measured in a child process of their own, each printed as [production, wall, realtime] seconds: eventlet's
# hub and multiprocessing's processes and semaphores stay out of the worker's own process.
CHILD_WAITS = """
import json, multiprocessing, queue, sys, time
from budgetlab.inworker.labtime import installed, wall_monotonic, wall_time

seconds, measured = float(sys.argv[1]), {}


def measure(name, wait):
    started, wall_started, real_started = time.monotonic(), wall_monotonic(), wall_time()
    try:
        wait()
    except (queue.Empty, TimeoutError, multiprocessing.TimeoutError):
        pass
    except BaseException as exc:
        if type(exc).__name__ != "Timeout":  # eventlet's
            raise
    measured[name] = [time.monotonic() - started, wall_monotonic() - wall_started, wall_time() - real_started]


def eventlet_timeout():
    import eventlet

    with eventlet.Timeout(seconds):
        eventlet.sleep(seconds * 100)


if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    lock = context.Lock()
    lock.acquire()
    sleeper = context.Process(target=time.sleep, args=(seconds * 10_000,), daemon=True)
    sleeper.start()
    measure("multiprocessing Event.wait", lambda: context.Event().wait(seconds))
    measure("multiprocessing Lock.acquire", lambda: lock.acquire(timeout=seconds))
    measure("multiprocessing Queue.get", lambda: context.Queue().get(timeout=seconds))
    measure("multiprocessing Process.join", lambda: sleeper.join(seconds))
    sleeper.kill()
    import eventlet

    measure("eventlet.sleep", lambda: eventlet.sleep(seconds))
    measure("eventlet.Timeout", eventlet_timeout)
    print(json.dumps(measured))
"""


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

    def child_waits():
        return json.loads(subprocess.run([sys.executable, "-c", CHILD_WAITS, repr(seconds)], check=True,
                                         capture_output=True, text=True).stdout)

    held, let_go = threading.RLock(), threading.Event()

    def hold():
        with held:
            let_go.wait()

    def sigtimedwait():
        # A real-time signal nobody sends: the wait can only end by its time-out.
        signal.sigtimedwait([signal.SIGRTMIN + 2], seconds)

    def pg_sleep_until():
        from django.db import connection

        with connection.cursor() as cursor:
            # On wall time the target would be production seconds away: the guard (wall seconds) ends it.
            cursor.execute("SET statement_timeout = '5s'")
            try:
                cursor.execute("SELECT pg_sleep_until(now() + make_interval(secs => %s))", [seconds])
            except Exception:  # noqa: BLE001 - the guard's cancel: the measurement shows the wait was wall time
                pass
            finally:
                cursor.execute("RESET statement_timeout")

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    sleeper = threading.Thread(target=threading.Event().wait, daemon=True)
    sleeper.start()
    def simple_queue_get():
        try:
            queue.SimpleQueue().get(timeout=seconds)
        except queue.Empty:
            pass

    # `right` stays open while they run: closed, it would make `left` readable at once.
    return (right, let_go), {
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
        "RLock.acquire": lambda: held.acquire(timeout=seconds),
        "SimpleQueue.get": simple_queue_get,
        "signal.sigtimedwait": sigtimedwait,
        "pg_sleep_until": pg_sleep_until,
        CHILD: child,
        CHILD_WAITS: child_waits,
    }


# Its own limits, far beyond its waits: the worker's flag would give it 120 s.
@app.task(name="probe.waits", soft_time_limit=3600, time_limit=3700)
def waits(seconds: float) -> dict:
    """Return, for each way of waiting, (production seconds by time.monotonic, wall seconds, and the seconds the
    machine's realtime clock moved meanwhile) it took; a child's time.sleep gives the first two."""
    measured = {}
    (_peer, let_go), ways = _waits(seconds)
    try:
        for name, wait in ways.items():
            started, wall_started, real_started = time.monotonic(), wall_monotonic(), wall_time()
            own = wait()
            if name == CHILD_WAITS:
                measured.update(own)
            else:
                measured[name] = own if name == CHILD else (time.monotonic() - started, wall_monotonic() - wall_started,
                                                            wall_time() - real_started)
    finally:
        let_go.set()
    return measured


# Limits of its own: the worker's flag (120 s) is 0.6 wall seconds at 200x, which a query, two Redis calls and a
# busy machine outlasted once (a rehearsal's second pass: the result was SoftTimeLimitExceeded, not the readings).
@app.task(name="probe.readings", soft_time_limit=3600, time_limit=3700)
def readings() -> dict:
    """Return every clock production code reads, as Unix timestamps taken together, and the monotonic ones' pace."""
    from django.db import connection
    from django.utils import timezone

    with connection.cursor() as cursor:
        # The SQL keywords, Django's Now() (STATEMENT_TIMESTAMP() on PostgreSQL) and a backend's own
        # transaction start as pg_stat_activity shows it, each as a Unix timestamp.
        cursor.execute("SELECT extract(epoch FROM now()), extract(epoch FROM clock_timestamp()), "
                       "extract(epoch FROM CURRENT_TIMESTAMP), "
                       "extract(epoch FROM LOCALTIMESTAMP AT TIME ZONE current_setting('TimeZone')), "
                       "extract(epoch FROM timeofday()::timestamptz), "
                       "(SELECT extract(epoch FROM xact_start) FROM pg_stat_activity WHERE pid = pg_backend_pid())")
        database = [float(value) for value in cursor.fetchone()]
    from django.db.models.functions import Now
    from kontor.books.models import Company

    django_now = Company.objects.annotate(at=Now()).values_list("at", flat=True).first()
    client = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"])
    seconds, micro = client.time()
    lua_seconds, lua_micro = client.eval("return redis.call('TIME')", 0)
    return {"time.time": time.time(), "datetime.now": datetime.datetime.now().timestamp(),
            "datetime.utcnow": datetime.datetime.utcnow().replace(tzinfo=datetime.timezone.utc).timestamp(),
            "timezone.now": timezone.now().timestamp(), "PostgreSQL now()": database[0],
            "PostgreSQL clock_timestamp()": database[1], "PostgreSQL CURRENT_TIMESTAMP": database[2],
            "PostgreSQL LOCALTIMESTAMP": database[3], "PostgreSQL timeofday()": database[4],
            "PostgreSQL pg_stat_activity": database[5], "Django Now()": django_now.timestamp(),
            "Redis TIME": seconds + micro / 1e6, "Redis TIME in a Lua script": int(lua_seconds) + int(lua_micro) / 1e6,
            "date.today": datetime.date.today().isoformat()}


@app.task(name="probe.database_day", soft_time_limit=3600, time_limit=3700)  # as probe.readings
def database_day() -> dict:
    """On a connection whose lab clock runs days ahead of wall time, return what its SQL says today is.

    The session's own clock is a few production minutes ahead of wall
    time, on the same date; this connection's anchor lies ten wall days
    back, so its production date is years ahead and any part of SQL that
    reads the server's own date shows it.
    """
    import psycopg

    from budgetlab.inworker import clock, servertime

    # The wall instant this process's production time stands for, ten days back.
    options = servertime.connection_options(clock.factor(), clock.wall_time(time.time()) - 10 * 86400)
    with psycopg.connect(os.environ["KONTOR_DATABASE_URL"], options=options, autocommit=True) as conn:
        age, same_date = conn.execute("SELECT extract(epoch FROM age(now())), CURRENT_DATE = now()::date").fetchone()
    return {"age(now())": float(age), "CURRENT_DATE is now()'s date": same_date}


@app.task(name="probe.redis_expiry", soft_time_limit=20000, time_limit=21000)
def redis_expiry(seconds: float) -> dict:
    """Set a key that lives `seconds` with SET NX EX; report the production seconds until Redis no longer had it.

    The key is looked for every production second, so a busy machine can
    only make it look late, never early.
    """
    client = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"])
    key = f"probe:lease:{os.getpid()}:{time.monotonic()}"
    started, wall_started, real_started = time.monotonic(), wall_monotonic(), wall_time()
    client.set(key, "held", nx=True, ex=int(seconds))
    while client.exists(key):
        time.sleep(1.0)
    return {"lived": time.monotonic() - started, "waited": wall_monotonic() - wall_started,
            "realtime": wall_time() - real_started}


# Each way lab code sets a Redis key's expiry, every one `seconds` long.
def _set_expiring(client, key: str, seconds: int) -> dict:
    """Set one key per way of giving it an expiry; return {way: key}."""
    keys = {}

    def way(name):
        keys[name] = f"{key}:{len(keys)}"
        return keys[name]

    client.set(way("SET EX"), "held", nx=True, ex=seconds)
    client.eval("return redis.call('set', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2])", 1, way("EVAL SET NX EX"), "held",
                seconds)
    client.eval("redis.call('set', KEYS[1], 'held'); return redis.call('pexpireat', KEYS[1], ARGV[1])", 1,
                way("EVAL PEXPIREAT"), int((time.time() + seconds) * 1000))
    expire = client.register_script("redis.call('set', KEYS[1], 'held'); return redis.call('expire', KEYS[1], ARGV[1])")
    expire(keys=[way("register_script EXPIRE")], args=[seconds])
    extended = client.lock(way("Lock.extend"), timeout=seconds / 2)
    extended.acquire(blocking=False)
    extended.extend(seconds / 2)
    reacquired = client.lock(way("Lock.reacquire"), timeout=seconds)
    reacquired.acquire(blocking=False)
    reacquired.reacquire()

    async def set_async():
        import redis.asyncio

        async_client = redis.asyncio.Redis.from_url(os.environ["KONTOR_BROKER_URL"])
        try:
            await async_client.set(way("redis.asyncio SET EX"), "held", ex=seconds)
        finally:
            await async_client.aclose()

    asyncio.run(set_async())
    return keys


@app.task(name="probe.redis_expiries", soft_time_limit=20000, time_limit=21000)
def redis_expiries(seconds: int) -> dict:
    """Give keys an expiry of `seconds` in every way lab code might; report their TTLs and how long each lived.

    Each key is looked for every production second, for at most three
    times its life: a key still there then lived on another clock.
    """
    client = redis.Redis.from_url(os.environ["KONTOR_BROKER_URL"])
    started = time.monotonic()
    keys = _set_expiring(client, f"probe:expiry:{os.getpid()}:{started}", seconds)
    first = keys["SET EX"]
    readings = {"TTL": client.ttl(first), "PTTL": client.pttl(first) / 1000,
                "TTL in a Lua script": client.eval("return redis.call('ttl', KEYS[1])", 1, first),
                "PTTL in a Lua script": client.eval("return redis.call('pttl', KEYS[1])", 1, first) / 1000,
                "read after": time.monotonic() - started}
    lived = {}
    while len(lived) < len(keys) and time.monotonic() - started < 3 * seconds:
        for name, key in keys.items():
            if name not in lived and not client.exists(key):
                lived[name] = time.monotonic() - started
        time.sleep(1.0)
    client.delete(*keys.values())
    return {"readings": readings, "lived": {name: lived.get(name) for name in keys}}


def _slow_redis(delay: float) -> tuple[int, Callable[[], None]]:
    """Serve the Redis protocol on a free loopback port, answering every command +PONG `delay` wall seconds late.

    A reply that late is what a busy machine makes of a real server's
    millisecond; its time here is real: the server sleeps on the lab
    clock for `delay` converted to production seconds.
    """
    listener = socket.create_server(("127.0.0.1", 0))

    def commands(buffer: bytes) -> tuple[list[bytes], bytes]:
        """Read the whole RESP arrays at the start of `buffer`; return each one's command name and what is left."""
        names = []
        while buffer.startswith(b"*") and b"\r\n" in buffer:
            head, rest = buffer.split(b"\r\n", 1)
            words = []
            for _ in range(int(head[1:])):
                if b"\r\n" not in rest:
                    return names, buffer
                size, rest = rest.split(b"\r\n", 1)
                if len(rest) < int(size[1:]) + 2:
                    return names, buffer
                words.append(rest[:int(size[1:])])
                rest = rest[int(size[1:]) + 2:]
            names, buffer = names + [words[0].upper() if words else b""], rest
        return names, buffer

    def serve(connection: socket.socket) -> None:
        with connection:
            buffer = b""
            while chunk := connection.recv(4096):
                names, buffer = commands(buffer + chunk)
                for name in names:
                    time.sleep(CLOCK.production(delay))
                    # No HELLO: the client falls back to RESP2, whose every other reply here is a status.
                    connection.sendall(b"-ERR unknown command\r\n" if name == b"HELLO" else b"+PONG\r\n")

    def accept() -> None:
        try:
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=serve, args=(connection,), daemon=True).start()
        except OSError:  # closed: the probe is over
            return

    def stop() -> None:
        listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone would not)
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    return listener.getsockname()[1], stop


@app.task(name="probe.slow_redis_replies", soft_time_limit=20000, time_limit=21000)
def slow_redis_replies(delay: float) -> dict:
    """PING a Redis whose replies come `delay` wall seconds late, with redis-py's blocking and asyncio clients at
    their default time-outs; return what each said ("PONG" or the error)."""
    port, stop = _slow_redis(delay)
    said = {}
    try:
        client = redis.Redis(port=port)
        try:
            client.ping()
            said["blocking"] = "PONG"
        except redis.RedisError as exc:
            said["blocking"] = repr(exc)
        finally:
            client.close()

        async def ping() -> str:
            import redis.asyncio

            client = redis.asyncio.Redis(port=port)
            try:
                await client.ping()
                return "PONG"
            except redis.RedisError as exc:
                return repr(exc)
            finally:
                await client.aclose()

        said["asyncio"] = asyncio.run(ping())
    finally:
        stop()
    return said
