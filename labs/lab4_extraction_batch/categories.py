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

from kontor.books.models import Category


def category_table():
    """Return every category, in code order."""
    # TODO: meet the goal above; whatever a caller does with the rows it gets
    #       must not change what the next caller sees.
    return list(Category.objects.order_by("code"))


def category(code):
    """Return the category with this code."""
    # TODO: the same goal holds for this lookup.
    return Category.objects.get(code=code)


def category_for(text):
    """Return the code of the category whose keywords share the most words with text, or None."""
    words = set(text.lower().split())
    best_code, best_score = None, 0
    for row in category_table():
        score = len(words & set(row.keywords.split()))
        if score > best_score:
            best_code, best_score = row.code, score
    return best_code


# TODO: a category saved or deleted through the ORM is never served stale afterwards.
