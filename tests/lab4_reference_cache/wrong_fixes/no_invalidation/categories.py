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

import functools
from types import MappingProxyType
from typing import NamedTuple

from kontor.books.models import Category


class CategoryRow(NamedTuple):
    code: str
    name: str
    group: str
    vat_rate: object
    keywords: str


# Wrong: read once and never again; a save or a delete in this process is never seen.
@functools.lru_cache(maxsize=1)
def _categories_by_code():
    return MappingProxyType({c.code: CategoryRow(c.code, c.name, c.group, c.vat_rate, c.keywords)
                             for c in Category.objects.order_by("code")})


def category_table():
    """Return every category, in code order."""
    return tuple(_categories_by_code().values())


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
