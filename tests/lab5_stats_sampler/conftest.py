"""Fixtures of lab 5's checks: the learner's sampler, a table nothing else scans, and a load with a known count."""

from __future__ import annotations

import importlib
import random

import psycopg
import pytest

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories.lab5 import SLUG, sampler_import_error

PROBE_TABLE = "scan_probe"
# Fifty rows: far below min_parallel_table_scan_size, so a count(*) is always
# one plain sequential scan and never a parallel one with several counted scans.
PROBE_ROWS = 50


@pytest.fixture
def sampler(target_dir):
    """The target's lab5_stats_sampler.sampler module."""
    try:
        return importlib.import_module(f"{SLUG}.sampler")
    except Exception as exc:  # the learner's module is graded only if it imports
        raise CouldNotGrade(sampler_import_error(exc)) from None


@pytest.fixture
def probe(kontor_db) -> str:
    """A committed table without an index in the check's own database; nothing but the load scans it."""
    with psycopg.connect(kontor_db, autocommit=True) as setup:
        setup.execute(f"CREATE TABLE {PROBE_TABLE} (id integer NOT NULL, label text NOT NULL)")
        setup.execute(f"INSERT INTO {PROBE_TABLE} SELECT n, 'row ' || n FROM generate_series(1, {PROBE_ROWS}) AS n")
    return PROBE_TABLE


class Load:
    """A connection of its own, in autocommit, that scans the probe table a known number of times."""

    def __init__(self, url: str, table: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True, application_name="lab5-check-load")
        self.table = table
        self.total = 0

    def __call__(self, scans: int) -> None:
        # One statement, one sequential scan each; sent in a pipeline, so a burst of hundreds
        # costs one round trip instead of hundreds on a busy machine.
        with self.connection.pipeline():
            for _ in range(scans):
                self.connection.execute(f"SELECT count(*) FROM {self.table}")
        # The backend publishes its counters when it goes idle after this call,
        # before the call returns: every scan above is visible to any sampler.
        self.connection.execute("SELECT pg_stat_force_next_flush()")
        self.total += scans

    def pid(self) -> int:
        return self.connection.info.backend_pid

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def load(kontor_db, probe):
    """Run `load(k)` to make exactly k scans of the probe table visible; `load.total` counts them all."""
    runner = Load(kontor_db, probe)
    yield runner
    runner.close()


@pytest.fixture
def scans() -> random.Random:
    """Random scan counts: a sampler that only happens to get one number right still fails."""
    return random.Random()
