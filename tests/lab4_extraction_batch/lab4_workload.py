"""Lab 4's own workload for the graders: categorise documents and write their transactions, through the target's lookups.

A worker loads this module next to the lab's tasks (and lab4_probe.py
calls `categorise` directly). For each document it runs the target's
extractor and prompt builder, saves the category on the document and
writes the receipt's transaction, both through the ORM, so post_save
fires for Documents and Transactions between the lookups, as in
Kontor's real batch. Each task reports its process and how many of its
queries named the category table (Django's query log in that process);
the category ids come from the grader, so the writes themselves never
read the table.
"""

from __future__ import annotations

import datetime
import os
import re
from decimal import Decimal

from celery import shared_task

CATEGORY_TABLE = '"books_category"'
# Reads of the category table as PostgreSQL counts them: sequential scans, plus index scans other
# than the primary key's, which PostgreSQL's own foreign-key check uses for every row written
# with a category (the writes above), not a read by the lookups.
TABLE_READS = ("SELECT t.seq_scan + coalesce((SELECT sum(i.idx_scan) FROM pg_stat_user_indexes i "
               "JOIN pg_index x ON x.indexrelid = i.indexrelid WHERE i.relid = t.relid AND NOT x.indisprimary), 0) "
               "FROM pg_stat_user_tables t WHERE t.relname = 'books_category'")
AMOUNT = re.compile(r"Summe\s+([\d.,]+)\s+EUR")


def amount_of(text: str) -> Decimal:
    """The receipt's total as printed ("Summe 1.234,56 EUR"), or zero when the text has none."""
    found = AMOUNT.search(text)
    if not found:
        return Decimal("0.00")
    return Decimal(found[1].replace(".", "").replace(",", "."))


def categorise(document, category_ids: dict[str, int], currency_id: int) -> str:
    """Match one document, build its prompt, save its category and write its transaction; return the prompt."""
    from lab4_extraction_batch import extractor, prompts

    extraction = extractor.extract(document)
    prompt = prompts.document_prompt(extraction)
    record(document, extraction, category_ids, currency_id)
    return prompt


def record(document, extraction, category_ids: dict[str, int], currency_id: int) -> None:
    """Save the matched category on the document and write the receipt's transaction, through the ORM."""
    from kontor.books.models import Transaction

    document.ocr_text = extraction.text
    document.category_id = category_ids.get(extraction.category_code) if extraction.category_code else None
    document.save(update_fields=["ocr_text", "category"])
    Transaction.objects.create(company_id=document.company_id, booked_on=datetime.date(2026, 1, 31),
                               amount=amount_of(extraction.text), currency_id=currency_id,
                               counterparty=document.filename, purpose=f"receipt {document.filename}",
                               category_id=document.category_id)


@shared_task(name="lab4check.categorise_documents")
def categorise_documents(document_ids: list[int], category_ids: dict[str, int], currency_id: int) -> dict:
    """Categorise the documents and write their transactions; say which process did it and what it read."""
    from django.db import connection

    from kontor.books.models import Document

    counted = {"category_queries": 0}

    def count(execute, sql, params, many, context):
        counted["category_queries"] += CATEGORY_TABLE in sql
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        documents = list(Document.objects.filter(pk__in=document_ids).order_by("pk"))
        for document in documents:
            categorise(document, category_ids, currency_id)
    return {"pid": os.getpid(), "documents": len(documents), **counted}
