"""The helper Kontor's sweeps share: apply one function to every row of a queryset.

The contract, which the checks rely on:

    apply_per_row(rows, func, *, label="rows") -> RowCounts(processed, failed)

- `rows` is a QuerySet, walked once with `.iterator()`; `func(row)` does
  the work for one row.
- A row for which `func` raises is counted as failed, logged at ERROR
  with the row's id and the traceback, and the helper goes on with the
  next row. A failed row leaves nothing behind in the database and does
  not spoil the rows after it, also when the caller runs inside
  `transaction.atomic()`.
- At the end, one summary line `processed=N failed=M` (after the label),
  at WARNING when M > 0; with no failures it may be logged at INFO.
- `SoftTimeLimitExceeded` is not a bad row: it leaves the helper at once.
- It returns the counts: N rows for which `func` returned, M for which it raised.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Callable, NamedTuple

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import Model, QuerySet

log = logging.getLogger(__name__)


class RowCounts(NamedTuple):
    """How many rows func handled, and how many raised."""

    processed: int
    failed: int


def apply_per_row(rows: QuerySet, func: Callable[[Model], object], *, label: str = "rows") -> RowCounts:
    """Apply func to every row, count what worked and what failed, and say so in one line."""
    # In PostgreSQL one failed statement aborts the whole transaction around it. Inside the
    # caller's transaction each row therefore gets a savepoint (a nested atomic block), which
    # rolls back that row alone and leaves the transaction usable. In autocommit a failed
    # statement aborts nothing else, so the row runs as it is.
    in_transaction = transaction.get_connection(rows.db).in_atomic_block
    processed = failed = 0
    for row in rows.iterator():
        try:
            with transaction.atomic(using=rows.db) if in_transaction else contextlib.nullcontext():
                func(row)
        except SoftTimeLimitExceeded:
            # A time limit is not this row's fault: it is the worker asking the task to stop.
            raise
        except Exception:
            failed += 1
            log.exception("%s: row %s failed", label, row.pk)
        else:
            processed += 1
    # One line per run, at WARNING when anything failed: a number an alert can watch.
    log.log(logging.WARNING if failed else logging.INFO, "%s: processed=%d failed=%d", label, processed, failed)
    return RowCounts(processed, failed)
