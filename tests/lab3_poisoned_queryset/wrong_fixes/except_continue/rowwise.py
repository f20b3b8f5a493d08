"""The helper Kontor's sweeps share: apply one function to every row of a queryset."""

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
    """Wrong: a failed row is skipped in silence; nothing counts it, nothing says so."""
    in_transaction = transaction.get_connection(rows.db).in_atomic_block
    processed = 0
    for row in rows.iterator():
        try:
            with transaction.atomic(using=rows.db) if in_transaction else contextlib.nullcontext():
                func(row)
        except SoftTimeLimitExceeded:
            raise
        except Exception:
            continue
        processed += 1
    return RowCounts(processed, 0)
