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
    """Wrong: one handler around the whole loop; the first bad row still ends the sweep, only quietly now."""
    processed = failed = 0
    try:
        for row in rows.iterator():
            func(row)
            processed += 1
    except SoftTimeLimitExceeded:
        raise
    except Exception:
        failed += 1
        log.exception("%s: sweep failed after %d rows", label, processed)
    log.log(logging.WARNING if failed else logging.INFO, "%s: processed=%d failed=%d", label, processed, failed)
    return RowCounts(processed, failed)
