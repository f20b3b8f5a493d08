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
    """Wrong: every row the loop reached counts as processed, the failed ones included."""
    in_transaction = transaction.get_connection(rows.db).in_atomic_block
    processed = failed = 0
    for row in rows.iterator():
        processed += 1
        try:
            with transaction.atomic(using=rows.db) if in_transaction else contextlib.nullcontext():
                func(row)
        except SoftTimeLimitExceeded:
            raise
        except Exception:
            failed += 1
            log.exception("%s: row %s failed", label, row.pk)
    log.log(logging.WARNING if failed else logging.INFO, "%s: processed=%d failed=%d", label, processed, failed)
    return RowCounts(processed, failed)
