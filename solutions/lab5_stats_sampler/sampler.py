"""Samples PostgreSQL's scan counters to tell how hard Kontor's code leans on a table.

Measured with this module over one busy afternoon, 64 % of the sequential
scans of the category table came from the request path and 36 % from batch
jobs. That split is why the category cache was built for the web workers
first.

Retracted: the split above was never measured. Both of its samples were
read in one transaction, and since PostgreSQL 15 (stats_fetch_consistency =
cache) the first read of the statistics holds them until the transaction
ends, so the second read repeated the first and every delta was zero.
Re-sampled in autocommit, the category table took roughly 990 scans a
second in one window and fewer than 40 in a window five minutes on: the
load comes in bursts, and its split between requests and batches is unknown.

Lab 5: `budgetlab run 5` drives a known load against a table and puts this
module's figures next to what PostgreSQL really counted. Make every figure
true, whatever transaction the caller has open, and deal with the claim
above in the open. The signatures below are the contract; keep them.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg
from django.db import connection

_COUNTER = "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = %s"


def _stats_connection() -> psycopg.Connection:
    """Open a connection of the sampler's own, in autocommit, to the database Django uses."""
    # A read on Django's connection would land in the caller's transaction, where
    # the first look at pg_stat_* freezes it. In autocommit every read is its own
    # transaction and sees the counters as they are, and the caller's transaction
    # is never touched. `with` closes the connection, so none is left behind.
    settings = connection.settings_dict
    params = {"dbname": settings["NAME"], "user": settings["USER"], "password": settings["PASSWORD"],
              "host": settings["HOST"], "port": settings["PORT"]}
    return psycopg.connect(autocommit=True, application_name="kontor-scan-sampler",
                           **{key: value for key, value in params.items() if value})


def _read(stats: psycopg.Connection, table: str) -> int:
    row = stats.execute(_COUNTER, [table]).fetchone()
    if row is None:
        raise LookupError(f"no table named {table!r} in this database")
    return row[0]


def seq_scans(table: str) -> int:
    """Return how many sequential scans PostgreSQL has counted on `table`; LookupError if there is no such table."""
    with _stats_connection() as stats:
        return _read(stats, table)


def scan_delta(table: str, workload: Callable[[], object]) -> int:
    """Return how many sequential scans of `table` PostgreSQL counted while `workload()` ran.

    The workload publishes its scans before it returns, so every one of
    them can be counted. The caller's transaction, if any, is left exactly
    as it was: nothing committed, nothing rolled back.
    """
    with _stats_connection() as stats:
        before = _read(stats, table)
        workload()
        return _read(stats, table) - before


def scan_rates(table: str, window_seconds: float, windows: int, *,
               wait: Callable[[float], object] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> list[float]:
    """Return the scan rate of `table`, in scans per second, for each of `windows` consecutive windows.

    Time passes only through `wait(seconds)` and is read only from
    `clock()`, so a caller can drive the windows itself.
    """
    # One sample per window boundary: an average over the whole period would
    # turn a burst of 990 scans/s followed by a quiet 40/s into a steady 515/s.
    rates = []
    with _stats_connection() as stats:
        previous, previous_at = _read(stats, table), clock()
        for _ in range(windows):
            wait(window_seconds)
            current, now = _read(stats, table), clock()
            rates.append((current - previous) / (now - previous_at))
            previous, previous_at = current, now
    return rates
