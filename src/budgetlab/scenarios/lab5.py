"""`budgetlab run 5`: a bursty scan load on a scratch database, the learner's sampler beside what PostgreSQL counted.

The scenario copies the seeded database, then scans its category table
from connections of its own: a burst of about 990 scans per second, then
about 40. It calls the learner's `scan_delta` inside a transaction and
`scan_rates` over the windows of the load, and shows their figures next
to the load's own count and to samples read in autocommit. A rate is
judged against what PostgreSQL counted between the moments the sampler
could have read it (its reads lie between its calls to `wait`), so a busy
machine that wakes it late never makes a true figure look wrong.
Everything it starts is bounded in time and count and stopped before it
returns.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from budgetlab.errors import BudgetlabError
from budgetlab.harness.rig import Rig
from budgetlab.stories.lab5 import BURST, COUNTER, QUIET, SLUG, sampler_import_error

TABLE = "books_category"
WINDOW = 1.0
# (scans per second, windows, connections): the two figures of Kontor's re-measurement.
PHASES = ((BURST, 3, 3), (QUIET, 3, 1))
DELTA_RATE, DELTA_SECONDS = BURST, 1.0
# A busy backend publishes its counters about once a second; the load asks for
# it every 20 ms so that one-second windows show the load, not the flushes.
FLUSH_INTERVAL = 0.02


def play(target_dir: Path, console: Console) -> int:
    """Play the scenario against the sampler in target_dir/lab5_stats_sampler; 0 when it ran."""
    with Rig(target_dir, label="run5") as rig, rig.django() as url:
        sampler = _import_sampler(target_dir)
        console.print(f"A bursty load on {TABLE} in a scratch database\n"
                      f"your sampler: {target_dir.name}/{SLUG}/sampler.py\n")
        delta_ok = _one_delta(sampler, url, console)
        rates_ok = _window_rates(sampler, url, console)
        console.print(verdict(delta_ok and rates_ok))
        return 0


def verdict(agreed: bool) -> str:
    """The run's last line: whether every figure the sampler returned was what PostgreSQL counted."""
    if agreed:
        return "[bold green]Your sampler agrees with PostgreSQL.[/] Next: budgetlab check 5"
    # It may have raised, or returned no list, rather than returned a wrong figure.
    return "[bold red]Your sampler did not return what PostgreSQL counted.[/]"


def workload_note(runs: int, ran: int) -> str | None:
    """A line under part 1 when the load's count needs one: scan_delta never ran the workload, or ran it again."""
    if runs == 0:
        return "[yellow]scan_delta never ran its workload, so the load never started[/]"
    if runs > 1:
        return f"[yellow]scan_delta ran its workload {runs} times; the load ran {ran} scans in all[/]"
    return None


def _import_sampler(target_dir: Path):
    """Import the learner's sampler (Django already points at the scratch database)."""
    if str(target_dir) not in sys.path:
        sys.path.insert(0, str(target_dir))
    try:
        return importlib.import_module(f"{SLUG}.sampler")
    except Exception as exc:  # the learner's file: any error is theirs to see, in one line
        raise BudgetlabError(f"{target_dir.name}/{sampler_import_error(exc)}") from None


def _counter(url: str) -> int:
    """Read the table's scan counter in autocommit, on a connection used for nothing else."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as stats:
        return stats.execute(COUNTER, [TABLE]).fetchone()[0]


class Load:
    """Scan threads on connections of their own, paced to a schedule that starts at `start`."""

    def __init__(self, url: str, start: float, phases, window: float) -> None:
        import psycopg

        self.start, self.window = start, window
        self.stop = threading.Event()
        self.counts: dict[int, int] = {}
        self.lock = threading.Lock()
        self.errors: list[str] = []
        self.threads = []
        offset = 0.0
        for rate, windows, connections in phases:
            seconds = windows * window
            for _ in range(connections):
                conn = psycopg.connect(url, autocommit=True, application_name="budgetlab-run5-load")
                thread = threading.Thread(target=self._scan, daemon=True,
                                          args=(conn, start + offset, seconds, rate / connections))
                self.threads.append(thread)
            offset += seconds

    def begin(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def _scan(self, conn, begin: float, seconds: float, rate: float) -> None:
        total = int(rate * seconds)
        flushed = begin
        try:
            for number in range(total):
                due = begin + number / rate
                delay = due - time.monotonic()
                if self.stop.wait(delay) if delay > 0 else self.stop.is_set():
                    break
                conn.execute(f"SELECT count(*) FROM {TABLE}")
                now = time.monotonic()
                with self.lock:
                    slot = int((now - self.start) // self.window)
                    self.counts[slot] = self.counts.get(slot, 0) + 1
                if now - flushed >= FLUSH_INTERVAL:
                    conn.execute("SELECT pg_stat_force_next_flush()")
                    flushed = now
            conn.execute("SELECT pg_stat_force_next_flush()")
        except Exception as exc:  # shown to the person, never a traceback from a thread
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            conn.close()

    def total(self) -> int:
        with self.lock:
            return sum(self.counts.values())

    def finish(self, timeout: float = 15.0) -> None:
        """Let the schedule run out (or, after an interrupt, stop at once) and wait for every thread."""
        if sys.exc_info()[0] is not None:
            self.stop.set()
        for thread in self.threads:
            thread.join(timeout)
        self.stop.set()
        for thread in self.threads:
            thread.join(2.0)


def _call(function, *args, **kwargs):
    """Run the learner's function; return (value, None) or (None, one line about what it raised)."""
    try:
        return function(*args, **kwargs), None
    except Exception as exc:  # the learner's code: report it in one line and go on
        first = (str(exc).strip().splitlines() or [""])[0]
        return None, f"{type(exc).__name__}: {first}"


def _close_enough(got: float, want: float) -> bool:
    return abs(got - want) <= 0.1 * want + 5


@dataclass(frozen=True)
class Reading:
    """The counter read on the run's own connection, and the clock just before and just after that read."""

    before: float
    count: int
    after: float


class Witness:
    """Reads the counter each time the learner's scan_rates starts, enters or leaves `wait`, or returns.

    Its k-th sample of the counter (and of the clock) lies between the
    reading taken as the k-th wait returned (or as it was called) and the
    one taken as the next wait was entered (or as it returned).
    """

    def __init__(self, url: str) -> None:
        import psycopg

        self.readings: list[Reading] = []
        self._conn = psycopg.connect(url, autocommit=True, application_name="budgetlab-run5-witness")

    def read(self) -> None:
        before = time.monotonic()
        count = self._conn.execute(COUNTER, [TABLE]).fetchone()[0]
        self.readings.append(Reading(before, count, time.monotonic()))

    def close(self) -> None:
        self._conn.close()


def rate_bounds(readings: Sequence[Reading], window: float) -> list[tuple[float, float]] | None:
    """Per window, the lowest and highest rate a sampler could have returned and still be true; None if unknown.

    `readings` alternate: before the k-th sample (the call, or a wait's
    return) and after it (the next wait's entry, or the return). A rate may
    divide the delta by the planned window or by the time it measured; both
    are accepted. None when the sampler did not wait once per window, so its
    samples cannot be placed.
    """
    if len(readings) % 2 or len(readings) < 4:
        return None
    gaps = list(zip(readings[0::2], readings[1::2]))
    bounds = []
    for (opened, closed), (next_opened, next_closed) in zip(gaps, gaps[1:]):
        fewest, most = next_opened.count - closed.count, next_closed.count - opened.count
        shortest, longest = next_opened.before - closed.after, next_closed.after - opened.before
        low = min(fewest / window, fewest / longest)
        high = max(most / window, most / shortest) if shortest > 0 else float("inf")
        bounds.append((low, high))
    return bounds


def fits(got: object, bounds: tuple[float, float]) -> bool:
    """Whether a returned rate lies within what PostgreSQL counted (one scan a second of rounding either way)."""
    low, high = bounds
    return isinstance(got, (int, float)) and low - 1 <= got <= high + 1


def _one_delta(sampler, url: str, console: Console) -> bool:
    """Part 1: scan_delta around one second of burst, called inside transaction.atomic()."""
    from django.db import DatabaseError, transaction
    from django.db.transaction import TransactionManagementError

    console.print(f"[bold]1. One delta[/]: scan_delta inside transaction.atomic(), "
                  f"around {DELTA_SECONDS:.0f} s of ~{DELTA_RATE} scans/s")
    loads: list[Load] = []

    def workload() -> None:
        load = Load(url, time.monotonic(), ((DELTA_RATE, 1, 3),), DELTA_SECONDS)
        loads.append(load)
        load.begin().finish()

    from django.db import connection

    def transaction_id() -> str | None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_current_xact_id_if_assigned()::text")
            return cursor.fetchone()[0]

    before = _counter(url)
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:  # a caller with a transaction id, as one that wrote would have
                cursor.execute("SELECT pg_current_xact_id()")
            caller = transaction_id()
            counted, error = _call(sampler.scan_delta, TABLE, workload)
            if error is None and transaction_id() != caller:
                error = "ended the caller's transaction"
    except (DatabaseError, TransactionManagementError) as exc:
        counted, error = None, error or f"broke the caller's transaction: {type(exc).__name__}"
        connection.close()
    truth = _counter(url) - before
    ran = sum(load.total() for load in loads)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("load ran", "PostgreSQL counted (autocommit)", "your scan_delta"):
        table.add_column(column, justify="right")
    ok = error is None and counted == truth
    yours = Text(error or str(counted), style="green" if ok else "red")
    table.add_row(f"{ran} scans", f"{truth} scans", yours)
    console.print(table)
    note = workload_note(len(loads), ran)
    if note:
        console.print(note)
    console.print()
    return ok


@dataclass
class _Windows:
    """What part 2 shows: one row per window, filled in as the samples arrive."""

    count: int
    truth: list[float | None] = field(default_factory=list)
    ran: list[float | None] = field(default_factory=list)
    yours: list[float] | None = None
    bounds: list[tuple[float, float]] | None = None
    error: str | None = None
    done: bool = False

    def render(self) -> Table:
        table = Table(box=None, pad_edge=False, header_style="bold")
        for column in ("window", "load ran", "PostgreSQL (autocommit)", "your scan_rates"):
            table.add_column(column, justify="right")
        for number in range(self.count):
            truth = self.truth[number] if number < len(self.truth) else None
            ran = self.ran[number] if number < len(self.ran) else None
            if self.yours is not None and number < len(self.yours) and isinstance(self.yours[number], (int, float)):
                good = self.good(number)
                yours = Text(f"{self.yours[number]:.0f}/s", style="green" if good else "red")
            else:
                yours = Text("…" if not self.done else "-", style="dim")
            table.add_row(f"{number * WINDOW:.0f}–{(number + 1) * WINDOW:.0f} s",
                          "…" if ran is None else f"{ran:.0f}/s", "…" if truth is None else f"{truth:.0f}/s", yours)
        if self.error:
            return Group(table, Text(f"your scan_rates raised {self.error}", style="red"))
        return table

    def good(self, number: int) -> bool:
        """Whether the sampler's rate for this window is what PostgreSQL counted."""
        got = self.yours[number] if self.yours is not None and number < len(self.yours) else None
        if self.bounds is not None and len(self.bounds) == self.count:
            return fits(got, self.bounds[number])
        # Samples that cannot be placed are compared with the run's own, read at the planned moments.
        truth = self.truth[number] if number < len(self.truth) else None
        return isinstance(got, (int, float)) and truth is not None and _close_enough(got, truth)


def _window_rates(sampler, url: str, console: Console) -> bool:
    """Part 2: scan_rates over the burst and the quiet phase, one window per second."""
    count = sum(windows for _, windows, _ in PHASES)
    console.print(f"[bold]2. Rates[/]: scan_rates over {count} windows of {WINDOW:g} s; "
                  f"~{PHASES[0][0]} scans/s for {PHASES[0][1] * WINDOW:g} s, then ~{PHASES[1][0]}/s")
    shown = _Windows(count)
    start = time.monotonic() + 0.3
    load = Load(url, start, PHASES, WINDOW)

    def sample_windows() -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as stats:
            time.sleep(max(0.0, start - 0.02 - time.monotonic()))
            previous = stats.execute(COUNTER, [TABLE]).fetchone()[0]
            for number in range(count):
                time.sleep(max(0.0, start + (number + 1) * WINDOW - time.monotonic()))
                current = stats.execute(COUNTER, [TABLE]).fetchone()[0]
                shown.truth.append((current - previous) / WINDOW)
                previous = current
                with load.lock:
                    shown.ran.append(load.counts.get(number, 0) / WINDOW)

    elapsed = [0.0]
    witness = Witness(url)

    def wait(seconds: float) -> None:
        # Absolute deadlines: the learner's windows end where the load's windows end.
        witness.read()
        elapsed[0] += seconds
        time.sleep(max(0.0, start + elapsed[0] - time.monotonic()))
        witness.read()

    watcher = threading.Thread(target=sample_windows, daemon=True)
    with Live(console=console, get_renderable=shown.render, refresh_per_second=8, transient=False):
        load.begin()
        watcher.start()
        # The learner's first sample lands just before the load starts, like the one above.
        time.sleep(max(0.0, start - 0.03 - time.monotonic()))
        try:
            witness.read()
            shown.yours, shown.error = _call(sampler.scan_rates, TABLE, WINDOW, count, wait=wait, clock=time.monotonic)
            witness.read()
        finally:
            load.finish()
            watcher.join(count * WINDOW + 5)
            witness.close()
        shown.bounds = rate_bounds(witness.readings, WINDOW)
        shown.done = True
    for error in load.errors[:1]:
        console.print(f"[yellow]the load stopped early: {error}[/]")
    console.print()
    yours = shown.yours if isinstance(shown.yours, list) else []
    return shown.error is None and len(yours) == count and all(shown.good(number) for number in range(count))
