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

import logging
from typing import Callable, NamedTuple

from django.db.models import Model, QuerySet

log = logging.getLogger(__name__)


class RowCounts(NamedTuple):
    """How many rows func handled, and how many raised."""

    processed: int
    failed: int


def apply_per_row(rows: QuerySet, func: Callable[[Model], object], *, label: str = "rows") -> RowCounts:
    """Apply func to every row, count what worked and what failed, and say so in one line."""
    processed = 0
    # TODO: make this loop keep the contract in the module docstring.
    for row in rows.iterator():
        func(row)
        processed += 1
    return RowCounts(processed, 0)
