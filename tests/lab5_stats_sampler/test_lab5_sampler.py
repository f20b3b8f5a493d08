"""Hidden checks of lab 5: the sampler's figures are true inside any transaction, per window, and leave nothing open.

Every check scans a table of its own, in a database of its own, from a
load connection that publishes its counters before it returns; the scan
counts are random, and nothing here waits on a clock.
"""

from __future__ import annotations

import contextlib
import gc
import numbers
import re
import uuid

import lab5_symptoms as say
import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.db.transaction import TransactionManagementError

from budgetlab import stack
from budgetlab.stories.lab5 import BURST, COUNTER, QUIET
from kontor.books.models import Company

WINDOW = 0.5
# Two windows of a burst, two quiet ones: the re-measured figures of the story.


# The learner's functions called so far in this process: a caller's block that breaks says so only after one ran.
CALLED: list[str] = []


def call(what: str, function, *args, **kwargs):
    """Call the learner's function; an exception becomes the check's symptom, not a traceback."""
    CALLED.append(what)
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # any error of the learner's code is the finding
        raise AssertionError(say.raised(what, exc)) from None


class Watched:
    """A workload for scan_delta that runs `made` scans each time it is run, and counts its runs and scans."""

    def __init__(self, load, made: int) -> None:
        self.load, self.made, self.runs, self.counted = load, made, 0, None
        self.before = load.total

    def __call__(self) -> None:
        self.runs += 1
        self.load(self.made)

    def delta(self, sampler, probe: str):
        """Run the learner's scan_delta around this workload; return what it counted."""
        self.counted = call("scan_delta", sampler.scan_delta, probe, self)
        return self.counted

    def judge(self, where: str) -> None:
        """Every scan of the workload counted; the symptom says how often it ran and what it made."""
        assert self.counted == self.made, say.delta(where, self.runs, self.load.total - self.before, self.counted)


class Timeline:
    """A clock that moves only when the sampler waits; each window's scans run when time passes its end."""

    def __init__(self, load, counts: list[int], window: float = WINDOW) -> None:
        self.load, self.counts, self.window = load, counts, window
        self.start = self.now = 1000.0
        self.done = 0

    def clock(self) -> float:
        return self.now

    def wait(self, seconds: float) -> None:
        self.now += seconds
        while self.done < len(self.counts) and self.start + (self.done + 1) * self.window <= self.now + 1e-9:
            self.load(self.counts[self.done])
            self.done += 1

    def ran(self) -> list[float]:
        """The rates the load ran in the windows that have come so far."""
        return [count / self.window for count in self.counts[:self.done]]


def bursty_counts(scans) -> list[int]:
    burst = round(BURST * WINDOW)
    quiet = round(QUIET * WINDOW)
    return [burst + scans.randint(-25, 25), burst + scans.randint(-25, 25),
            quiet + scans.randint(-5, 5), quiet + scans.randint(-5, 5)]


@contextlib.contextmanager
def leaves_atomic(what: str):
    """Wrap a caller's atomic block that must still run and end cleanly after the sampler ran inside it."""
    called = len(CALLED)
    try:
        yield
    except (DatabaseError, TransactionManagementError) as error:
        if len(CALLED) == called:
            raise  # the block broke before any of the learner's code ran: the check's own fault
        raise AssertionError(say.broke_atomic(what, error)) from None


def assert_rates(rates, timeline: Timeline, where: str) -> None:
    expected = [count / timeline.window for count in timeline.counts]
    got = list(rates) if isinstance(rates, (list, tuple)) else rates
    assert isinstance(got, list) and len(got) == len(expected), say.rates_shape(len(expected), where, got)
    close = all(isinstance(rate, numbers.Real) and abs(rate - want) <= 0.02 * want + 1 / timeline.window
                for rate, want in zip(got, expected))
    assert close, say.rates(timeline.ran(), len(expected), timeline.window,
                                                               timeline.now - timeline.start, where, got)


@pytest.mark.external
def test_delta_in_autocommit_counts_every_scan(sampler, probe, load, scans):
    """A delta taken with no transaction open counts every scan."""
    watched = Watched(load, scans.randint(5, 60))
    watched.delta(sampler, probe)
    watched.judge("with no transaction open")


@pytest.mark.external
def test_delta_inside_a_transaction_counts_every_scan(sampler, probe, load, scans):
    """A delta taken inside the caller's transaction counts every scan."""
    watched = Watched(load, scans.randint(5, 60))
    with leaves_atomic("transaction.atomic() block"):
        with transaction.atomic():
            watched.delta(sampler, probe)
    watched.judge("inside the caller's transaction.atomic() block")


@pytest.mark.external
def test_delta_inside_a_savepoint_counts_every_scan(sampler, probe, load, scans):
    """A delta taken in a savepoint counts every scan, even after the caller read the statistics."""
    earlier, made = scans.randint(5, 60), scans.randint(5, 60)
    with leaves_atomic("savepoint (nested transaction.atomic())"):
        with transaction.atomic():
            with connection.cursor() as cursor:  # the caller looks at the statistics first, as a view might
                cursor.execute(COUNTER, [probe])
            load(earlier)
            watched = Watched(load, made)
            with transaction.atomic():
                watched.delta(sampler, probe)
                now = call("seq_scans", sampler.seq_scans, probe)
                total = load.total
    watched.judge("inside a savepoint (nested transaction.atomic())")
    assert now == total, say.counter_inside_savepoint(now, total)


@pytest.mark.external
def test_sampler_leaves_the_callers_transaction_as_it_was(sampler, probe, load, scans, kontor_db):
    """The caller's transaction is neither committed nor rolled back; its unsaved rows stay."""
    name = f"Lab 5 Probe {uuid.uuid4().hex[:8]} GmbH"

    def state() -> tuple[int, str | None]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid(), pg_current_xact_id_if_assigned()::text")
            return cursor.fetchone()

    with leaves_atomic("transaction.atomic() block"):
        with transaction.atomic():
            Company.objects.create(name=name)
            pid, xact = state()
            call("seq_scans", sampler.seq_scans, probe)
            call("scan_delta", sampler.scan_delta, probe, lambda: load(scans.randint(5, 60)))
            timeline = Timeline(load, [scans.randint(5, 30), scans.randint(5, 30)])
            call("scan_rates", sampler.scan_rates, probe, WINDOW, 2, wait=timeline.wait, clock=timeline.clock)
            pid_after, xact_after = state()
            assert pid_after == pid, say.connection_replaced(pid, pid_after)
            assert xact_after == xact, say.transaction_ended(xact, xact_after)
            assert Company.objects.filter(name=name).exists(), say.ROW_GONE
            with psycopg.connect(kontor_db, autocommit=True) as other:
                seen = other.execute("SELECT count(*) FROM books_company WHERE name = %s", [name]).fetchone()[0]
            assert seen == 0, say.ROW_COMMITTED
            transaction.set_rollback(True)
    assert not Company.objects.filter(name=name).exists(), say.ROW_SURVIVED


@pytest.mark.external
def test_window_rates_follow_a_bursty_load(sampler, probe, load, scans):
    """Per-window rates follow a load that drops from about 990 to about 40 scans/s."""
    counts = bursty_counts(scans)
    timeline = Timeline(load, counts)
    rates = call("scan_rates", sampler.scan_rates, probe, WINDOW, len(counts), wait=timeline.wait,
                 clock=timeline.clock)
    assert_rates(rates, timeline, "with no transaction open")


@pytest.mark.external
def test_window_rates_inside_a_transaction_follow_a_bursty_load(sampler, probe, load, scans):
    """Per-window rates taken inside the caller's transaction follow the same load."""
    counts = bursty_counts(scans)
    timeline = Timeline(load, counts)
    with leaves_atomic("transaction.atomic() block"):
        with transaction.atomic():
            rates = call("scan_rates", sampler.scan_rates, probe, WINDOW, len(counts), wait=timeline.wait,
                         clock=timeline.clock)
    assert_rates(rates, timeline, "inside the caller's transaction")


@pytest.mark.external
def test_sampler_closes_every_connection_it_opens(sampler, probe, load, scans, kontor_db):
    """Every connection the sampler opens is closed again."""
    def sample_everything() -> None:
        call("seq_scans", sampler.seq_scans, probe)
        call("scan_delta", sampler.scan_delta, probe, lambda: load(scans.randint(5, 60)))
        timeline = Timeline(load, [scans.randint(5, 30), scans.randint(5, 30)])
        call("scan_rates", sampler.scan_rates, probe, WINDOW, 2, wait=timeline.wait, clock=timeline.clock)

    sample_everything()
    with transaction.atomic():
        sample_everything()
    gc.collect()
    connection.close()
    load.close()
    name = kontor_db.rsplit("/", 1)[1]
    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as admin:
        try:
            # Without FORCE: PostgreSQL waits a few seconds for closing backends, then refuses.
            admin.execute(f'DROP DATABASE "{name}"')
        except psycopg.errors.ObjectInUse:
            rows = admin.execute("SELECT coalesce(nullif(application_name, ''), 'no name') FROM pg_stat_activity "
                                 "WHERE datname = %s", [name]).fetchall()
            raise AssertionError(say.connections_left([row[0] for row in rows])) from None


def test_docstring_retracts_the_unmeasured_split(sampler):
    """The docstring retracts the unmeasured split and says what was wrong with it."""
    lines = (sampler.__doc__ or "").splitlines()
    starts = [number for number, line in enumerate(lines) if line.strip().startswith("Retracted:")]
    assert starts, say.NO_RETRACTION
    paragraph = []
    for line in lines[starts[0]:]:
        if not line.strip():
            break
        paragraph.append(line.strip())
    note = " ".join(paragraph)
    assert re.search(r"transaction|snapshot", note, re.IGNORECASE), say.retraction_without_cause(note)
