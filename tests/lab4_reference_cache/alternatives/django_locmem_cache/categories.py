"""Category lookups for the OCR extractor and the prompt builders.

Kontor's category table is reference data: a few dozen leaves of the chart
of accounts, the same for every company, changed only by migrations.
extractor.py and prompts.py call the three functions below for every
document and every transaction in a batch, and every call reads the table
again. A batch of 2,500 items scans this small table thousands of times.

Goal: a worker process reads the table once and answers every later
lookup from what it read, and a category saved or deleted through the ORM
shows up in that process's next lookup. The callers stay as they are: keep
the three names, and keep returning rows with code, name, group, vat_rate
and keywords attributes.
"""

from django.core.cache import cache
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from kontor.books.models import Category

# Django's cache framework with its default backend, a local-memory cache per process.
# It pickles what it stores, so every caller gets its own copy of the rows.
KEY = "lab4:categories-by-code"


def _categories_by_code():
    rows = cache.get(KEY)
    if rows is None:
        rows = {c.code: c for c in Category.objects.order_by("code")}
        cache.set(KEY, rows, timeout=None)
    return rows


def category_table():
    """Return every category, in code order."""
    return list(_categories_by_code().values())


def category(code):
    """Return the category with this code."""
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


@receiver(post_save, sender=Category, dispatch_uid="lab4-locmem-save")
@receiver(post_delete, sender=Category, dispatch_uid="lab4-locmem-delete")
def category_cache_clear(**_kwargs) -> None:
    """Forget this process's copy; the next lookup reads the table again."""
    cache.delete(KEY)
