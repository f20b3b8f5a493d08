"""Hidden checks of lab 3's shared helper, called directly: the counts at the two extremes.

These run `rowwise.apply_per_row` in the grader's own process, on a fresh
copy of the seeded data, and read its log records there.
"""

from __future__ import annotations

import importlib
import logging
import re

SUMMARY = re.compile(r"\bprocessed=(\d+),?\s+failed=(\d+)\b")


def _helper():
    try:
        return importlib.import_module("lab3_reminder_sweep.rowwise").apply_per_row
    except Exception as exc:
        raise AssertionError(f"rowwise.apply_per_row could not be imported: {type(exc).__name__}: {exc}") from None


def _counts(value) -> tuple[int, int]:
    try:
        return int(value.processed), int(value.failed)
    except (AttributeError, TypeError, ValueError):
        raise AssertionError(f"apply_per_row returned {value!r}, not RowCounts(processed, failed)") from None


def test_the_helper_counts_an_empty_queryset(kontor_db, caplog):
    """On an empty queryset the helper calls nothing, returns zero counts and logs no WARNING."""
    from kontor.books.models import Invoice

    caplog.set_level(logging.DEBUG)
    calls = []
    counts = _counts(_helper()(Invoice.objects.none(), calls.append))
    assert counts == (0, 0), f"on an empty queryset apply_per_row counted processed={counts[0]} failed={counts[1]}"
    assert not calls, f"on an empty queryset apply_per_row called the function {len(calls)} times"
    loud = [record for record in caplog.records if record.levelno >= logging.WARNING]
    assert not loud, f"on an empty queryset apply_per_row logged at {loud[0].levelname}: {loud[0].getMessage()!r}"


def test_the_helper_counts_a_queryset_where_every_row_fails(kontor_db, caplog):
    """When every row fails, the helper counts each, names each id at ERROR and sums up in one WARNING line."""
    from kontor.books.models import Invoice
    from kontor.datagen import TODAY

    rows = Invoice.objects.filter(due_on__gte=TODAY).order_by("id")
    ids = list(rows.values_list("pk", flat=True))

    def refuse(invoice):
        raise LookupError(f"no customer file for {invoice.number}")

    caplog.set_level(logging.DEBUG)
    try:
        counts = _counts(_helper()(rows, refuse))
    except LookupError:
        raise AssertionError(f"apply_per_row stopped at the first of {len(ids)} rows that all fail, "
                             "instead of counting them") from None
    assert counts == (0, len(ids)), (f"on {len(ids)} rows that all fail, apply_per_row counted "
                                     f"processed={counts[0]} failed={counts[1]}")
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    unnamed = [pk for pk in ids if not any(re.search(rf"(?<![\w.]){pk}(?![\w.])", text) for text in errors)]
    assert not unnamed, (f"on {len(ids)} rows that all fail, no ERROR record names the ids "
                         f"{', '.join(map(str, unnamed[:5]))}{' ...' if len(unnamed) > 5 else ''}")
    summaries = [record for record in caplog.records if SUMMARY.search(record.getMessage())]
    assert len(summaries) == 1, f"on {len(ids)} rows that all fail, apply_per_row logged {len(summaries)} summary lines"
    said = tuple(int(n) for n in SUMMARY.search(summaries[0].getMessage()).groups())
    assert said == (0, len(ids)), f"the summary says {summaries[0].getMessage()!r} for {len(ids)} rows that all failed"
    assert summaries[0].levelno == logging.WARNING, (
        f"the summary of {len(ids)} failed rows is logged at {summaries[0].levelname}: {summaries[0].getMessage()!r}")
