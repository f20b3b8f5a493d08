"""The batch tasks a Kontor worker runs for lab 4: documents and transactions to model prompts.

Context for lab 4, not yours to change. A worker imports this module at
start-up (KONTOR_TASK_MODULES=lab4_extraction_batch.tasks), and with it
extractor.py, prompts.py and categories.py; the prompts then go on to the
model, which is where a batch's time budget belongs.
"""

from __future__ import annotations

from kontor.books.models import Document, Transaction
from kontor.celery_app import app
from lab4_extraction_batch import extractor, prompts


@app.task(name="lab4.prepare_documents")
def prepare_documents(document_ids: list[int]) -> int:
    """Read, match and prompt each document; return how many prompts were built."""
    documents = Document.objects.filter(pk__in=document_ids).order_by("pk")
    return len([prompts.document_prompt(extractor.extract(document)) for document in documents])


@app.task(name="lab4.prepare_transactions")
def prepare_transactions(transaction_ids: list[int]) -> int:
    """Prompt each transaction; return how many prompts were built."""
    transactions = Transaction.objects.filter(pk__in=transaction_ids).select_related("currency").order_by("pk")
    return len([prompts.transaction_prompt(transaction) for transaction in transactions])
