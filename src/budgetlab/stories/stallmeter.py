"""How long a busy machine kept a worker's processes waiting for a core: measured, so a late ending can be told apart.

A story's tolerances are production seconds, and a fast lab clock makes
them fractions of a wall second (lab 6's 20 s are 0.4 s at 50x). A
machine loaded far past its cores keeps a runnable process waiting that
long: the child whose timer fired, or whose answer came, waits for a core
before it can write the ending. Linux counts that wait for every thread
(/proc/PID/task/TID/schedstat, its second field); a thread here reads it
for every process it watches twenty times a second. What the most kept
thread waited between two instants stands for what the machine added to a
run then (which thread ran the run, the check does not know); a story
compares it with how late an ending came (see lab6.late). Processes a run
passes its work between (the worker, the database, a model service) are
watched as groups, and the groups' most kept threads add up. Without
/proc (macOS) nothing is measured and nothing is excused.
`DatabaseBackends` names the PostgreSQL backends of a database on this
machine.
"""

from __future__ import annotations

import bisect
import ipaddress
import os
import threading
import time
from collections.abc import Callable, Iterable
from types import TracebackType
from urllib.parse import urlsplit

# Wall seconds between readings: each reading widens a window by at most this much.
TICK = 0.05
# Wall seconds between looks for new processes in the worker (a prefork pool may replace a child).
REFRESH = 0.5


def _waited(pid: int) -> dict[int, float]:
    """Return, for each thread of a process, the wall seconds it has spent runnable but waiting for a core."""
    waited = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return waited
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                waited[int(tid)] = int(stat.read().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue
    return waited


def waited_most(pid: int) -> float:
    """Wall seconds the most kept thread of a process has waited for a core since it started (0 without /proc)."""
    return max(_waited(pid).values(), default=0.0)


class StallMeter:
    """A thread that reads how long each thread of the watched processes has waited for a core, TICK by TICK."""

    def __init__(self) -> None:
        self._groups: tuple[Callable[[], Iterable[int]], ...] = ()
        self._looked = 0.0  # time.monotonic() of the last look for processes; 0: look at the next reading
        # Per reading, appended in step (the counts first): its wall instant (time.time), and each thread's
        # seconds waited so far, keyed by (its group, its id). `lost` bisects the instants in place: a check asks it
        # on every poll.
        self._times: list[float] = []
        self._counts: list[dict[tuple[int, int], float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="budgetlab-stall-meter", daemon=True)

    def __enter__(self) -> StallMeter:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def watch(self, *groups: Callable[[], Iterable[int]]) -> None:
        """Measure the processes each group names (a worker tree's), looked up again every REFRESH seconds.

        A run's work passes from one group to the next and back (the worker,
        the database backend that serves its connection, the model service),
        one thread of each at a time: what it waited is at most the sum over
        the groups of each group's most kept thread, which `lost` returns.
        """
        self._groups, self._looked = groups, 0.0

    def _run(self) -> None:
        pids: list[tuple[int, int]] = []
        reading: dict[tuple[int, int], float] = {}
        while not self._stop.wait(TICK):
            if time.monotonic() - self._looked >= REFRESH:
                pids = [(number, pid) for number, group in enumerate(self._groups) for pid in group()]
                self._looked = time.monotonic()
            # A thread that has ended keeps its last count: a window that reaches past its end still sees its wait.
            reading = dict(reading)
            for number, pid in pids:
                reading.update(((number, tid), waited) for tid, waited in _waited(pid).items())
            self._counts.append(reading)
            self._times.append(time.time())

    def lost(self, since: float, until: float | None = None) -> float:
        """Wall seconds the most kept thread of each group waited for a core between two wall instants (`until`:
        now), summed over the groups.

        Read from the last reading at or before `since` to the first at or
        after `until`, so a window is never measured short.
        """
        taken = len(self._times)  # readings complete so far (their counts were appended first)
        until = time.time() if until is None else until
        if taken < 2:
            return 0.0
        first = max(bisect.bisect_right(self._times, since, hi=taken) - 1, 0)
        last = min(bisect.bisect_left(self._times, until, hi=taken), taken - 1)
        before, after = self._counts[first], self._counts[last]
        most: dict[int, float] = {}
        for key, waited in after.items():
            most[key[0]] = max(most.get(key[0], 0.0), waited - before.get(key, 0.0))
        return sum(most.values())


class DatabaseBackends:
    """The PostgreSQL backends connected to one database, when its server runs on this machine (else none).

    Asked by the meter's thread only; its own connection is closed on exit.
    A process id is taken only while /proc says it is a postgres process:
    an id read from a server elsewhere would name some process here.
    """

    def __init__(self, url: str) -> None:
        self._url, self._conn = url, None
        self._here = self._local()

    def __enter__(self) -> DatabaseBackends:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()

    def _local(self) -> bool:
        host = urlsplit(self._url).hostname or ""
        if host in ("", "localhost") or host.startswith("/"):
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def pids(self) -> set[int]:
        if not self._here:
            return set()
        import psycopg

        try:
            if self._conn is None:
                # Not named like a stalled backend (stalls.APPLICATION_PREFIX), which stalls.release() ends.
                self._conn = psycopg.connect(self._url, autocommit=True, application_name="budgetlab-meter")
            rows = self._conn.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND pid <> pg_backend_pid()").fetchall()
        except psycopg.Error:
            return set()  # measured without them; a dead server is reported where it is used
        return {pid for (pid,) in rows if _is_postgres(pid)}


def _is_postgres(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().startswith("postgres")
    except OSError:
        return False
