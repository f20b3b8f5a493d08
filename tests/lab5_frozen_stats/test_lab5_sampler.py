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

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.db.transaction import TransactionManagementError

from budgetlab import stack
from budgetlab.stories.lab5 import BURST, COUNTER, QUIET
from kontor.books.models import Company

WINDOW = 0.5
# Two windows of a burst, two quiet ones: the re-measured figures of the story.


def call(what: str, function, *args, **kwargs):
    """Call the learner's function; an exception becomes the check's symptom, not a traceback."""
    try:
        return function(*args, **kwargs)
    except Exception as exc:  # any error of the learner's code is the finding
        first = (str(exc).strip().splitlines() or [""])[0]
        raise AssertionError(f"{what} raised {type(exc).__name__}: {first}") from None


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


def bursty_counts(scans) -> list[int]:
    burst = round(BURST * WINDOW)
    quiet = round(QUIET * WINDOW)
    return [burst + scans.randint(-25, 25), burst + scans.randint(-25, 25),
            quiet + scans.randint(-5, 5), quiet + scans.randint(-5, 5)]


def rates_text(values) -> str:
    return ", ".join(f"{value:.0f}" if isinstance(value, numbers.Real) else repr(value) for value in values)


@contextlib.contextmanager
def leaves_atomic(what: str):
    """Wrap a caller's atomic block that must still end cleanly after the sampler ran inside it."""
    try:
        yield
    except (DatabaseError, TransactionManagementError) as error:
        first = (str(error).strip().splitlines() or [""])[0]
        raise AssertionError(f"the caller's {what} failed to end after the sampler ran inside it: "
                             f"{type(error).__name__}: {first}") from None


def assert_rates(rates, counts: list[int], where: str) -> None:
    expected = [count / WINDOW for count in counts]
    got = list(rates) if isinstance(rates, (list, tuple)) else rates
    assert isinstance(got, list) and len(got) == len(expected), (
        f"scan_rates was asked for {len(expected)} windows {where} and returned {got!r}")
    close = all(isinstance(rate, numbers.Real) and abs(rate - want) <= 0.02 * want + 1 / WINDOW
                for rate, want in zip(got, expected))
    assert close, (f"the load ran {rates_text(expected)} scans/s in its {len(expected)} windows {where}; "
                   f"scan_rates reported {rates_text(got)}")


@pytest.mark.external
def test_delta_in_autocommit_counts_every_scan(sampler, probe, load, scans):
    """A delta taken with no transaction open counts every scan."""
    made = scans.randint(5, 60)
    counted = call("scan_delta", sampler.scan_delta, probe, lambda: load(made))
    assert counted == made, (f"the load made {made} scans while scan_delta watched with no transaction open; "
                             f"scan_delta counted {counted}")


@pytest.mark.external
def test_delta_inside_a_transaction_counts_every_scan(sampler, probe, load, scans):
    """A delta taken inside the caller's transaction counts every scan."""
    made = scans.randint(5, 60)
    with leaves_atomic("transaction.atomic() block"):
        with transaction.atomic():
            counted = call("scan_delta", sampler.scan_delta, probe, lambda: load(made))
    assert counted == made, (f"the load made {made} scans while scan_delta watched inside the caller's "
                             f"transaction.atomic() block; scan_delta counted {counted}")


@pytest.mark.external
def test_delta_inside_a_savepoint_counts_every_scan(sampler, probe, load, scans):
    """A delta taken in a savepoint counts every scan, even after the caller read the statistics."""
    earlier, made = scans.randint(5, 60), scans.randint(5, 60)
    with leaves_atomic("savepoint (nested transaction.atomic())"):
        with transaction.atomic():
            with connection.cursor() as cursor:  # the caller looks at the statistics first, as a view might
                cursor.execute(COUNTER, [probe])
            load(earlier)
            with transaction.atomic():
                counted = call("scan_delta", sampler.scan_delta, probe, lambda: load(made))
                now = call("seq_scans", sampler.seq_scans, probe)
    assert counted == made, (f"the load made {made} scans while scan_delta watched inside a savepoint "
                             f"(nested transaction.atomic()); scan_delta counted {counted}")
    assert now == load.total, (f"seq_scans returned {now} inside a savepoint; PostgreSQL had counted "
                               f"{load.total} scans of the table by then")


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
            assert pid_after == pid, ("the caller's database connection was closed while its transaction "
                                      "was open, and its unsaved work with it")
            assert xact_after == xact, (f"the caller's transaction ended while the sampler ran (transaction "
                                        f"{xact} became {xact_after or 'none'})")
            assert Company.objects.filter(name=name).exists(), \
                "the row the caller had written, not yet committed, was gone after the sampler ran"
            with psycopg.connect(kontor_db, autocommit=True) as other:
                seen = other.execute("SELECT count(*) FROM books_company WHERE name = %s", [name]).fetchone()[0]
            assert seen == 0, "the caller's uncommitted row was committed while the sampler ran"
            transaction.set_rollback(True)
    assert not Company.objects.filter(name=name).exists(), \
        "the caller's row survived the caller's own rollback: the sampler had committed it"


@pytest.mark.external
def test_window_rates_follow_a_bursty_load(sampler, probe, load, scans):
    """Per-window rates follow a load that drops from about 990 to about 40 scans/s."""
    counts = bursty_counts(scans)
    timeline = Timeline(load, counts)
    rates = call("scan_rates", sampler.scan_rates, probe, WINDOW, len(counts), wait=timeline.wait,
                 clock=timeline.clock)
    assert_rates(rates, counts, "with no transaction open")


@pytest.mark.external
def test_window_rates_inside_a_transaction_follow_a_bursty_load(sampler, probe, load, scans):
    """Per-window rates taken inside the caller's transaction follow the same load."""
    counts = bursty_counts(scans)
    timeline = Timeline(load, counts)
    with leaves_atomic("transaction.atomic() block"):
        with transaction.atomic():
            rates = call("scan_rates", sampler.scan_rates, probe, WINDOW, len(counts), wait=timeline.wait,
                         clock=timeline.clock)
    assert_rates(rates, counts, "inside the caller's transaction")


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
            names = ", ".join(sorted({row[0] for row in rows})) or "none left by now"
            raise AssertionError(f"connections to the check's database were still open after the sampler "
                                 f"returned (application names: {names}), so it could not be dropped") from None


def test_docstring_retracts_the_unmeasured_split(sampler):
    """The docstring retracts the unmeasured split and says what was wrong with it."""
    lines = (sampler.__doc__ or "").splitlines()
    starts = [number for number, line in enumerate(lines) if line.strip().startswith("Retracted:")]
    assert starts, ("sampler.py's module docstring has no paragraph that begins with 'Retracted:'; "
                    "the request/batch split is not retracted in the open")
    paragraph = []
    for line in lines[starts[0]:]:
        if not line.strip():
            break
        paragraph.append(line.strip())
    note = " ".join(paragraph)
    assert re.search(r"transaction|snapshot", note, re.IGNORECASE), (
        f"the retraction does not say what was wrong with the old figures: \"{note[:80]}\" never mentions "
        "the transaction or the snapshot the two reads shared")
