"""The helper Kontor's sweeps share: apply one function to every row of a queryset."""

from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterator, NamedTuple

from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction
from django.db.models import Model, QuerySet

log = logging.getLogger(__name__)


class RowCounts(NamedTuple):
    """How many rows func handled, and how many raised."""

    processed: int
    failed: int


def outcomes(rows: QuerySet, func: Callable[[Model], object]) -> Iterator[tuple[Model, BaseException | None]]:
    """Yield (row, None) for every row func handled and (row, error) for every row it raised on."""
    in_transaction = transaction.get_connection(rows.db).in_atomic_block
    for row in rows.iterator():
        try:
            with transaction.atomic(using=rows.db) if in_transaction else contextlib.nullcontext():
                func(row)
        except SoftTimeLimitExceeded:
            raise
        except Exception as error:
            yield row, error
        else:
            yield row, None


def apply_per_row(rows: QuerySet, func: Callable[[Model], object], *, label: str = "rows") -> RowCounts:
    """Apply func to every row through the outcomes generator, log each failure, and sum up in one line."""
    processed = failed = 0
    for row, error in outcomes(rows, func):
        if error is None:
            processed += 1
            continue
        failed += 1
        log.error("%s: row %s failed", label, row.pk, exc_info=error)
    log.log(logging.WARNING if failed else logging.INFO, "%s: processed=%d failed=%d", label, processed, failed)
    return RowCounts(processed, failed)
