"""The in-process half of lab 4's checks: one fresh process imports the target's code and runs a batch.

test_reference_cache.py runs it as `python lab4_probe.py DOCUMENTS TRANSACTIONS` with PYTHONPATH
naming the target tree and KONTOR_DATABASE_URL a database no other process uses. It prints one
JSON object: what the import, the batch (the lab's workload: documents categorised, their
transactions written, transactions prompted), the comparison with the uncached lookups, a caller
that mutates what it got, and saves and deletes through the ORM each showed.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from decimal import Decimal

from budgetlab.harness import stuck

# A batch that never ends is asked where it is before the check kills it (test_reference_cache.probe).
stuck.arm()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from kontor.books.models import Category, Currency, Document, Transaction  # noqa: E402
from lab4_symptoms import changes, first_difference  # noqa: E402
from lab4_workload import TABLE_READS, record  # noqa: E402

TABLE = '"books_category"'
FIELDS = ("code", "name", "group", "vat_rate", "keywords")


def category_queries(capture: CaptureQueriesContext) -> int:
    return sum(1 for query in capture.captured_queries if TABLE in query["sql"])


def table_scans(sampler: psycopg.Connection) -> int:
    """Reads of the category table as PostgreSQL counts them, read in autocommit on the sampler's own connection."""
    return int(sampler.execute(TABLE_READS).fetchone()[0])


def flush_statistics() -> None:
    """Make this process's backend publish its pending counters before the sampler reads them.

    A backend flushes at most once a second when it goes idle; this request
    makes the flush happen before the statement's reply reaches the client.
    """
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")


def failure(exc: BaseException) -> str:
    """One line: the exception and the innermost frame in the target's code, if any."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "lab4_extraction_batch" in f.filename]
    where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def run_batch(extractor, prompts, documents, transactions, writes=None) -> list[tuple[str, object]]:
    """Every item through the extractor and its prompt builder, as the worker's tasks do.

    With writes (category ids, currency id), each document's category is saved and its
    transaction written between the lookups, as lab4_workload does on a worker.
    """
    outputs = []
    for document in documents:
        extraction = extractor.extract(document)
        outputs.append((f"document {document.filename}", (extraction, prompts.document_prompt(extraction))))
        if writes:
            record(document, extraction, *writes)
    for transaction in transactions:
        outputs.append((f"transaction {transaction.pk}", prompts.transaction_prompt(transaction)))
    return outputs


class Uncached:
    """The starter's lookups over one fresh read of the table: what the uncached code returns."""

    def __init__(self) -> None:
        self.rows = list(Category.objects.order_by("code"))
        self.by_code = {row.code: row for row in self.rows}

    def category_table(self):
        return list(self.rows)

    def category(self, code):
        return self.by_code[code]

    def category_for(self, text):
        words = set(text.lower().split())
        best_code, best_score = None, 0
        for row in self.rows:
            score = len(words & set(row.keywords.split()))
            if score > best_score:
                best_code, best_score = row.code, score
        return best_code


def compare(categories, extractor, prompts, documents, transactions, actual) -> dict:
    uncached = Uncached()
    names = ("category_table", "category", "category_for")
    saved = {name: getattr(categories, name) for name in names}
    try:
        for name in names:
            setattr(categories, name, getattr(uncached, name))
        expected = run_batch(extractor, prompts, documents, transactions)
    finally:
        for name, function in saved.items():
            setattr(categories, name, function)
    wrong = [(label, first_difference(want, got)) for (label, want), (_, got) in zip(expected, actual) if want != got]
    return {"items": len(expected), "different": len(wrong), "first": wrong[0] if wrong else None}


def snapshot(categories) -> dict:
    """Plain values of what the lookups answer now, so later changes to the rows cannot touch it."""
    table = [tuple(getattr(row, name) for name in FIELDS) for row in categories.category_table()]
    return {"table": table, "rent": categories.category("4210").name, "match": categories.category_for("rent office")}


def mutate(categories) -> dict:
    """Act as a careless caller: change the rows and the sequence it got back, then ask again."""
    before = snapshot(categories)
    attempted = []

    def attempt(label, action):
        try:
            action()
            attempted.append(label)
        except Exception:  # refused: an immutable value is exactly what a safe cache hands out
            pass

    table = categories.category_table()
    for row in list(table):
        attempt("renamed a row", lambda row=row: setattr(row, "name", "CORRUPTED"))
        attempt("changed a row's keywords", lambda row=row: setattr(row, "keywords", "corrupted"))
    attempt("appended a row", lambda: table.append(table[0]))
    attempt("reversed the order", lambda: table.reverse())
    one = categories.category("4210")
    attempt("renamed the row category('4210') returned", lambda: setattr(one, "name", "CORRUPTED"))
    return {"attempted": list(dict.fromkeys(attempted)), "changed": changes(before, snapshot(categories))}


def codes(categories) -> list[str]:
    return [row.code for row in categories.category_table()]


def invalidate(categories) -> dict:
    """Change the table through the ORM after the lookups have run, and ask again each time.

    The answers before the changes come from the same calls that warm the
    lookups, read at once: the sentences say "still" only against them.
    """
    table = {row.code: row.name for row in categories.category_table()}
    seen = {"before": {"category": categories.category("4210").name, "table": table.get("4210"),
                       "listed_4250": "4250" in table}}
    categories.category_for("rent")
    rent = Category.objects.get(code="4210")
    rent.name, rent.keywords = "Miete und Pacht", rent.keywords + " pacht"
    rent.save()
    seen["saved"] = {"category": categories.category("4210").name,
                     "table": next((row.name for row in categories.category_table() if row.code == "4210"), None),
                     "match": categories.category_for("pacht")}
    Category.objects.create(code="4215", name="Pacht Grundstücke", group="Raumkosten", vat_rate=Decimal("19.00"),
                            keywords="leasehold farmland")
    seen["created"] = {"listed": "4215" in codes(categories), "match": categories.category_for("farmland")}
    Category.objects.get(code="4250").delete()
    seen["deleted"] = {"listed": "4250" in codes(categories), "match": categories.category_for("cleaning janitor")}
    return seen


def main(document_count: int, transaction_count: int) -> dict:
    report: dict = {}
    # Read before the counters are: the writes name categories by id, as a producer would send them.
    writes = ({c.code: c.pk for c in Category.objects.all()}, Currency.objects.get(code="EUR").pk)
    flush_statistics()  # that read's scan is published now, not counted with the batch's
    with psycopg.connect(os.environ["KONTOR_DATABASE_URL"], autocommit=True) as sampler:
        before = table_scans(sampler)
        with CaptureQueriesContext(connection) as imported:
            try:
                importlib.import_module("lab4_extraction_batch.tasks")
            except Exception as exc:
                return {"import_error": failure(exc)}
        report["import_queries"] = category_queries(imported)
        flush_statistics()  # what the import read is counted apart from the batch
        imported_at = table_scans(sampler)
        report["import_scans"] = imported_at - before
        from lab4_extraction_batch import categories, extractor, prompts

        documents = list(Document.objects.order_by("pk")[:document_count])
        transactions = list(Transaction.objects.select_related("currency").order_by("pk")[:transaction_count])
        with CaptureQueriesContext(connection) as batch:
            try:
                outputs = run_batch(extractor, prompts, documents, transactions, writes)
            except Exception as exc:
                return {**report, "batch_error": failure(exc)}
        report["batch_queries"] = category_queries(batch)
        flush_statistics()
        report["scans"] = table_scans(sampler) - imported_at
    for phase, action in (("compare", lambda: compare(categories, extractor, prompts, documents, transactions, outputs)),
                          ("mutate", lambda: mutate(categories)),
                          ("invalidate", lambda: invalidate(categories))):
        try:
            report[phase] = action()
        except Exception as exc:
            report[f"{phase}_error"] = failure(exc)
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2])), default=str))
