"""The lab clock inside a process: production time at the lab's speed, through Python's own time APIs.

Lab code is ordinary production code: it reads `time.monotonic()`,
`time.time()` or `timezone.now()`, sleeps with `time.sleep()`, waits on an
`Event` or a socket with a time-out. In a process the workshop starts,
`install()` makes every one of those run on production time compressed by
the lab's factor, so a 600 s soft limit, a 40 s deadline and a 7,200 s
lease all mean what they say, and Celery's own pools apply their limits
on the same clock. Nothing is simulated: the process still waits, only
`factor` times as long.

The clock is anchored at one wall instant shared by every process of a
lab session (BUDGETLAB_CLOCK_ANCHOR): there production time equals wall
time, and from there on it runs 1/factor times as fast, so timestamps
that two processes write can be compared.

What it covers, each kept in production seconds for the caller:
- reading time: time.time/monotonic/perf_counter (and their _ns forms),
  time.clock_gettime on the realtime and monotonic clocks, time.localtime/
  gmtime/ctime/strftime without an explicit time, datetime.now/utcnow/today
  and date.today (so Django's timezone.now() too);
- waiting: time.sleep, threading's Condition/Event/Semaphore/Barrier/queue
  waits, RLock.acquire and Thread.join, queue.SimpleQueue.get,
  select.select/poll/epoll (and so selectors, asyncio and Celery's event
  loop), socket time-outs, signal.alarm, signal.setitimer and
  signal.sigtimedwait, multiprocessing's locks, semaphores, events,
  conditions and queues (their SemLock), and the timers of gevent's and
  eventlet's hubs (their sleep, Timeout and waits, which replace Python's
  once they monkey-patch it).
What it does not reach (a bare `Lock.acquire(timeout=...)`, waits inside C
extensions, ...) is registered in `budgetlab.inworker.seams`, which the
lab-clock page lists. The servers' own clocks (Redis TTLs, PostgreSQL's
now()) are brought onto the same clock by `budgetlab.inworker.servertime`.
"""

from __future__ import annotations

import ctypes
import gc
import select as _select
import signal as _signal
import socket as _socket
import time as _time

from budgetlab.inworker import afterimport

# Blocking waits with a positive time-out never wait less than this (wall seconds): an event
# loop's idle second at 5,000x would otherwise wake it 5,000 times a second.
SHORTEST_WAIT = 0.005
# A socket time-out is never shorter than this (wall seconds): below it, the loaded machine's own
# scheduling would decide whether a loopback reply from Redis is "late".
SHORTEST_SOCKET_WAIT = 0.1

_REAL = {name: getattr(_time, name) for name in (
    "time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep",
    "clock_gettime", "clock_gettime_ns", "localtime", "gmtime", "ctime", "strftime")}
_installed: "Clock | None" = None


class Clock:
    """Production time at 1/factor the speed of wall time, equal to wall time at `anchor`."""

    def __init__(self, factor: float, anchor: float):
        self.factor = factor
        self.speed = 1.0 / factor
        self.anchor = anchor
        # The same instant on the monotonic clock, so both clocks advance together.
        self.mono_anchor = _REAL["monotonic"]() - (_REAL["time"]() - anchor)

    def time(self) -> float:
        return self.anchor + (_REAL["time"]() - self.anchor) * self.speed

    def monotonic(self) -> float:
        return self.mono_anchor + (_REAL["monotonic"]() - self.mono_anchor) * self.speed

    def perf_counter(self) -> float:
        return self.mono_anchor + (_REAL["perf_counter"]() - self.mono_anchor) * self.speed

    def wall(self, seconds, shortest: float = 0.0):
        """Return the wall seconds a production wait of `seconds` takes (None and 0 stay as they are)."""
        if seconds is None or seconds <= 0:
            return seconds
        return max(seconds * self.factor, shortest)

    def production(self, wall_seconds):
        return None if wall_seconds is None else wall_seconds * self.speed


def wall_monotonic() -> float:
    """Return the machine's own monotonic clock, for probes that check the lab clock against it."""
    return _REAL["monotonic"]()


def wall_time() -> float:
    """Return the machine's own realtime clock, for probes that tell a step of the host's clock from the lab clock's."""
    return _REAL["time"]()


def installed() -> "Clock | None":
    """Return the clock this process runs on, or None on wall time."""
    return _installed


def install(factor: float, anchor: float) -> Clock | None:
    """Put this process on the lab clock; a factor of 1 leaves it on wall time. Idempotent."""
    global _installed
    if factor == 1 or _installed is not None:
        return _installed
    clock = _installed = Clock(factor, anchor)
    _patch_time(clock)
    _patch_datetime(clock)
    _patch_threading(clock)
    _patch_select(clock)
    _patch_socket(clock)
    _patch_signal(clock)
    _patch_queue(clock)
    afterimport.patch("gevent.hub", lambda module: _patch_gevent(module, clock))
    afterimport.patch("multiprocessing.synchronize", lambda module: _patch_multiprocessing(module, clock))
    # epolls' hub, Linux's default, inherits poll's wait.
    for hub in ("eventlet.hubs.poll", "eventlet.hubs.selects", "eventlet.hubs.kqueue"):
        afterimport.patch(hub, lambda module: _patch_eventlet(module, clock))
    return clock


class _Function:
    """A replacement that, like the built-in it replaces, is not bound when stored as a class attribute.

    Libraries keep the time functions in classes (logging.Formatter.converter = time.localtime,
    selectors' _select = select.select); a plain Python function there would receive `self`.
    """

    def __init__(self, function, name: str):
        self._function, self.__name__, self.__qualname__ = function, name, name

    def __call__(self, *args, **kwargs):
        return self._function(*args, **kwargs)

    def __repr__(self):
        return f"<lab-clock {self.__name__}>"


def _patch_time(clock: Clock) -> None:
    real = _REAL

    def sleep(seconds):
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        real["sleep"](seconds * clock.factor)

    def clock_gettime(clk_id):
        if clk_id == _time.CLOCK_REALTIME:
            return clock.time()
        if clk_id in _MONOTONIC_CLOCKS:
            return clock.monotonic()
        return real["clock_gettime"](clk_id)

    def strftime(format, t=None):
        return real["strftime"](format, real["localtime"](clock.time()) if t is None else t)

    def _now_or(fun):
        def at(secs=None):
            return fun(clock.time() if secs is None else secs)
        return at

    replacements = {
        "time": clock.time, "time_ns": lambda: int(clock.time() * 1e9),
        "monotonic": clock.monotonic, "monotonic_ns": lambda: int(clock.monotonic() * 1e9),
        "perf_counter": clock.perf_counter, "perf_counter_ns": lambda: int(clock.perf_counter() * 1e9),
        "sleep": sleep, "clock_gettime": clock_gettime,
        "clock_gettime_ns": lambda clk_id: int(clock_gettime(clk_id) * 1e9),
        "localtime": _now_or(real["localtime"]), "gmtime": _now_or(real["gmtime"]), "ctime": _now_or(real["ctime"]),
        "strftime": strftime,
    }
    for name, function in replacements.items():
        setattr(_time, name, _Function(function, name))


_MONOTONIC_CLOCKS = {getattr(_time, name) for name in ("CLOCK_MONOTONIC", "CLOCK_MONOTONIC_RAW", "CLOCK_BOOTTIME")
                     if hasattr(_time, name)}


def _patch_datetime(clock: Clock) -> None:
    import datetime

    # datetime's types are C types whose attributes cannot be set; their method table can, and every
    # reference to datetime.datetime, however it was imported, then reads production time.
    def now(cls, tz=None):
        return cls.fromtimestamp(clock.time(), tz)

    def utcnow(cls):
        return cls.fromtimestamp(clock.time(), datetime.timezone.utc).replace(tzinfo=None)

    def today(cls):
        return cls.fromtimestamp(clock.time())

    _set_type_method(datetime.datetime, "now", classmethod(now))
    _set_type_method(datetime.datetime, "utcnow", classmethod(utcnow))
    _set_type_method(datetime.date, "today", classmethod(today))


def _set_type_method(cls: type, name: str, value) -> None:
    gc.get_referents(cls.__dict__)[0][name] = value
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def _patch_threading(clock: Clock) -> None:
    import threading

    # Event, Semaphore, Barrier and queue.Queue all wait through Condition.wait.
    condition_wait, join = threading.Condition.wait, threading.Thread.join

    def wait(self, timeout=None):
        return condition_wait(self, clock.wall(timeout, SHORTEST_WAIT))

    def thread_join(self, timeout=None):
        return join(self, clock.wall(timeout, SHORTEST_WAIT))

    threading.Condition.wait = wait
    threading.Thread.join = thread_join
    threading._time = clock.monotonic  # in case threading was imported before the clock was installed
    # threading.RLock() makes a _CRLock, a C lock whose acquire waits in C: a subclass converts its time-out.
    # (gevent and eventlet set _CRLock to None when they patch threading; their RLock waits on their hub.)
    real_rlock = threading._CRLock
    if real_rlock is not None:
        class RLock(real_rlock):
            """threading.RLock, waiting its time-out on the lab clock."""

            def acquire(self, blocking=True, timeout=-1):
                return real_rlock.acquire(self, blocking, clock.wall(timeout, SHORTEST_WAIT))

        RLock.__module__, RLock.__qualname__ = real_rlock.__module__, real_rlock.__qualname__
        threading._CRLock = RLock


def _patch_queue(clock: Clock) -> None:
    import queue

    real_queue = queue.SimpleQueue

    class SimpleQueue(real_queue):
        """queue.SimpleQueue (a C type, not built on Condition), waiting its time-out on the lab clock."""

        def get(self, block=True, timeout=None):
            return real_queue.get(self, block, clock.wall(timeout, SHORTEST_WAIT))

    SimpleQueue.__module__, SimpleQueue.__qualname__ = real_queue.__module__, real_queue.__qualname__
    queue.SimpleQueue = SimpleQueue


def _patch_multiprocessing(module, clock: Clock) -> None:
    """Every multiprocessing lock, semaphore, event, condition and queue waits through a SemLock's acquire, in C."""
    make_methods = module.SemLock._make_methods

    def _make_methods(self):
        make_methods(self)
        acquire = self._semlock.acquire

        def scaled(block=True, timeout=None):
            return acquire(block, clock.wall(timeout, SHORTEST_WAIT))

        self.acquire = scaled

    module.SemLock._make_methods = _make_methods


def _patch_eventlet(module, clock: Clock) -> None:
    """Run eventlet's hub on the lab clock: it schedules on time.monotonic, then waits through the unpatched select."""
    wait = module.Hub.wait

    def scaled(self, seconds=None):
        return wait(self, clock.wall(seconds, SHORTEST_WAIT))

    module.Hub.wait = scaled


def _patch_select(clock: Clock) -> None:
    real_select, real_poll, real_epoll = _select.select, _select.poll, getattr(_select, "epoll", None)

    def scaled_select(rlist, wlist, xlist, timeout=None):
        return real_select(rlist, wlist, xlist, clock.wall(timeout, SHORTEST_WAIT))

    select = _Function(scaled_select, "select")

    class Poll:
        """select.poll, waiting its time-out (milliseconds) on the lab clock."""

        def __init__(self):
            self._poll = real_poll()

        def poll(self, timeout=None):
            if timeout is not None and timeout > 0:
                timeout = clock.wall(timeout / 1000.0, SHORTEST_WAIT) * 1000.0
            return self._poll.poll(timeout)

        def __getattr__(self, name):
            return getattr(self._poll, name)

    _select.select = select
    _select.poll = Poll
    if real_epoll is not None:
        class Epoll:
            """select.epoll, waiting its time-out on the lab clock."""

            def __init__(self, sizehint=-1, flags=0, _wrapped=None):
                self._epoll = _wrapped if _wrapped is not None else real_epoll(sizehint, flags)

            @classmethod
            def fromfd(cls, fd):
                return cls(_wrapped=real_epoll.fromfd(fd))

            def poll(self, timeout=None, maxevents=-1):
                if timeout is not None and timeout > 0:
                    timeout = clock.wall(timeout, SHORTEST_WAIT)
                return self._epoll.poll(timeout, maxevents)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self._epoll.close()

            def __getattr__(self, name):
                return getattr(self._epoll, name)

        _select.epoll = Epoll
    # selectors (imported by socket, and so before any lab code) bound the real functions at class definition.
    import selectors

    selectors.SelectSelector._select = select
    selectors.PollSelector._selector_cls = Poll
    if real_epoll is not None:
        selectors.EpollSelector._selector_cls = _select.epoll


def _patch_socket(clock: Clock) -> None:
    base = _socket.socket.__mro__[1]  # _socket.socket, the C type
    real_setdefault, real_getdefault = _socket.setdefaulttimeout, _socket.getdefaulttimeout

    def settimeout(self, value):
        base.settimeout(self, clock.wall(value, SHORTEST_SOCKET_WAIT))

    def gettimeout(self):
        return clock.production(base.gettimeout(self))

    _socket.socket.settimeout = settimeout
    _socket.socket.gettimeout = gettimeout
    _socket.setdefaulttimeout = _Function(lambda value: real_setdefault(clock.wall(value, SHORTEST_SOCKET_WAIT)),
                                          "setdefaulttimeout")
    _socket.getdefaulttimeout = _Function(lambda: clock.production(real_getdefault()), "getdefaulttimeout")


def _patch_signal(clock: Clock) -> None:
    real_setitimer, real_getitimer = _signal.setitimer, _signal.getitimer

    def setitimer(which, seconds, interval=0.0):
        old = real_setitimer(which, clock.wall(seconds, 1e-6) or 0.0, clock.wall(interval, 1e-6) or 0.0)
        return tuple(clock.production(value) for value in old)

    def getitimer(which):
        return tuple(clock.production(value) for value in real_getitimer(which))

    def alarm(seconds):
        # alarm() counts whole seconds; the lab clock needs fractions of one, which setitimer has.
        left, _ = setitimer(_signal.ITIMER_REAL, float(seconds))
        return int(round(left))

    real_sigtimedwait = _signal.sigtimedwait

    def sigtimedwait(sigset, timeout):
        return real_sigtimedwait(sigset, clock.wall(timeout, 1e-6))

    _signal.sigtimedwait = _Function(sigtimedwait, "sigtimedwait")
    _signal.setitimer = _Function(setitimer, "setitimer")
    _signal.getitimer = _Function(getitimer, "getitimer")
    _signal.alarm = _Function(alarm, "alarm")


def _patch_gevent(module, clock: Clock) -> None:
    """Run gevent's timers on the lab clock: after gevent's monkey-patching, its own sleep and waits are the ones used."""
    config = module.GEVENT_CONFIG
    made: dict[type, type] = {}

    def loop_class(self):
        base = config.loop
        if base not in made:
            class LabClockLoop(base):
                def timer(self, after, repeat=0.0, *args, **kwargs):
                    return super().timer(clock.wall(after) or after, clock.wall(repeat) or repeat, *args, **kwargs)

            made[base] = LabClockLoop
        return made[base]

    module.Hub.loop_class = property(loop_class)
