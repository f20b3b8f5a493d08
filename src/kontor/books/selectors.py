"""Reads: the queries Kontor's code uses, including the cached currency lookup.

The currency table is reference data. `currency_rates` keeps it for the
life of the process and `signals.py` drops the copy whenever a Currency is
saved or deleted through the ORM.
"""

from __future__ import annotations

import datetime
import functools
from decimal import Decimal
from types import MappingProxyType

from django.db.models import QuerySet

from kontor.books.models import BatchJob, Currency, Invoice


@functools.lru_cache(maxsize=1)
def currency_rates() -> MappingProxyType:
    """Return {code: rate to EUR} for every currency, read once per process.

    Assumes the table is static (changed by migrations or the admin, never
    per company), so one read-only mapping per worker process is enough. The
    mapping is immutable: a caller cannot corrupt the cache for the next one.
    """
    return MappingProxyType({c.code: c.rate_to_eur for c in Currency.objects.all()})


def currency_rate(code: str) -> Decimal:
    """Return the rate of one currency to the euro; KeyError for an unknown code."""
    return currency_rates()[code]


def invoices_due(today: datetime.date) -> QuerySet[Invoice]:
    """Return the open invoices whose due date has passed, oldest first."""
    return Invoice.objects.filter(status=Invoice.Status.OPEN, due_on__lt=today).order_by("due_on", "id")


def jobs_stuck(model: type[BatchJob], older_than: datetime.timedelta,
               now: datetime.datetime) -> QuerySet[BatchJob]:
    """Return jobs still in their running state that started longer ago than older_than."""
    return model.objects.filter(status=model.RUNNING, started_at__lt=now - older_than).order_by("started_at")
