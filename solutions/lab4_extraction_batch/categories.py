"""Category lookups for the OCR extractor and the prompt builders.

Kontor's category table is reference data: a few dozen leaves of the chart
of accounts, the same for every company, changed only by migrations.
extractor.py and prompts.py call the three functions below for every
document and every transaction in a batch, and a batch spends far more of
its time here than anyone expected.

Goal: a batch's time goes to its model calls, not to this table (the
checks allow one query on it per worker process and batch); every lookup
answers what it answered before; a category saved, created or deleted
through the ORM is never served stale to the process that changed it;
nothing a caller does to what it got changes what the next caller gets;
importing this module runs no query. The callers stay as they are: keep
the three names, and keep returning rows with code, name, group, vat_rate
and keywords attributes.
"""

import functools
from decimal import Decimal
from types import MappingProxyType
from typing import NamedTuple

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from kontor.books.models import Category


class CategoryRow(NamedTuple):
    """One category as the lookups hand it out: a tuple, so nobody can change it in place."""

    code: str
    name: str
    group: str
    vat_rate: Decimal
    keywords: str


# The fix: one read per process, the same pattern as kontor.books.selectors.currency_rates.
@functools.lru_cache(maxsize=1)
def _categories_by_code() -> MappingProxyType:
    """Return {code: CategoryRow} for every category, read on the first call in this process.

    What this cache assumes: the table is static reference data, changed by
    migrations; it has no per-company dimension; and each worker process
    keeps its own copy for its lifetime. The mapping is read-only and its
    rows are tuples, so a caller cannot corrupt the copy the next caller
    gets. The receivers below drop it when a Category is saved or deleted
    through the ORM in this process; other processes keep theirs until they
    restart, which a deployment with a migration does anyway.
    """
    return MappingProxyType({c.code: CategoryRow(c.code, c.name, c.group, c.vat_rate, c.keywords)
                             for c in Category.objects.order_by("code")})


def category_table():
    """Return every category, in code order."""
    # A new tuple over the cached rows: no query, and nothing a caller can append to.
    return tuple(_categories_by_code().values())


def category(code):
    """Return the category with this code."""
    # The same cached copy, indexed by code: a dictionary lookup instead of a query.
    return _categories_by_code()[code]


def category_for(text):
    """Return the code of the category whose keywords share the most words with text, or None."""
    words = set(text.lower().split())
    best_code, best_score = None, 0
    for row in category_table():
        score = len(words & set(row.keywords.split()))
        if score > best_score:
            best_code, best_score = row.code, score
    return best_code


# Connected when this module is imported, which a worker does at start-up through tasks.py.
# dispatch_uid keeps a second import from connecting them twice.
@receiver(post_save, sender=Category, dispatch_uid="lab4-category-cache-on-save")
@receiver(post_delete, sender=Category, dispatch_uid="lab4-category-cache-on-delete")
def category_cache_clear(**_kwargs) -> None:
    """Forget this process's copy; the next lookup reads the table again."""
    _categories_by_code.cache_clear()
