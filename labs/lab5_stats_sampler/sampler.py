"""Samples PostgreSQL's scan counters to tell how hard Kontor's code leans on a table.

Measured with this module over one busy afternoon, 64 % of the sequential
scans of the category table came from the request path and 36 % from batch
jobs. That split is why the category cache was built for the web workers
first.

Lab 5: `budgetlab run 5` drives a known load against a table and puts this
module's figures next to what PostgreSQL really counted. Make every figure
true, whatever transaction the caller has open, and deal with the claim
above in the open. The signatures below are the contract; keep them.
"""

# TODO: the split above was never shown. Retract it in this docstring, in a
# paragraph that begins with "Retracted:" and says what was wrong with it;
# do not delete it quietly.

from __future__ import annotations

import time
from collections.abc import Callable

from django.db import connection, transaction

_COUNTER = "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = %s"


def seq_scans(table: str) -> int:
    """Return how many sequential scans PostgreSQL has counted on `table`; LookupError if there is no such table."""
    # TODO: return the counter as it is now, even when the caller has a transaction open.
    with connection.cursor() as cursor:
        cursor.execute(_COUNTER, [table])
        row = cursor.fetchone()
    if row is None:
        raise LookupError(f"no table named {table!r} in this database")
    return row[0]


def scan_delta(table: str, workload: Callable[[], object]) -> int:
    """Return how many sequential scans of `table` PostgreSQL counted while `workload()` ran.

    The workload publishes its scans before it returns, so every one of
    them can be counted. The caller's transaction, if any, is left exactly
    as it was: nothing committed, nothing rolled back.
    """
    # TODO: count the scans the workload made, inside or outside the caller's transaction.
    with transaction.atomic():
        before = seq_scans(table)
        workload()
        after = seq_scans(table)
    return after - before


def scan_rates(table: str, window_seconds: float, windows: int, *,
               wait: Callable[[float], object] = time.sleep,
               clock: Callable[[], float] = time.monotonic) -> list[float]:
    """Return the scan rate of `table`, in scans per second, for each of `windows` consecutive windows.

    Time passes only through `wait(seconds)` and is read only from
    `clock()`, so a caller can drive the windows itself.
    """
    # TODO: one rate per window; a burst must not be averaged away.
    started = clock()
    total = scan_delta(table, lambda: wait(window_seconds * windows))
    rate = total / (clock() - started)
    return [rate] * windows
