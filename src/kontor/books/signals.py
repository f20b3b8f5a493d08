"""Receivers that keep the process-lifetime reference caches honest."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from kontor.books.models import Currency
from kontor.books.selectors import currency_rates


@receiver(post_save, sender=Currency, dispatch_uid="currency-cache-on-save")
@receiver(post_delete, sender=Currency, dispatch_uid="currency-cache-on-delete")
def currency_cache_clear(**_kwargs) -> None:
    """Forget the cached rates; the next lookup in this process reads the table again.

    Signals fire only in the process that saved, so other workers keep their
    copy until they restart; acceptable for rates that change by migration.
    """
    currency_rates.cache_clear()
