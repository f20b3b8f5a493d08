"""The prompt builders: the text the model gets for a document or a transaction.

Context for lab 4, not yours to change. Each prompt lists every category,
so the model picks from the real chart of accounts, and names the keyword
match as a suggestion.
"""

from __future__ import annotations

from kontor.books.models import Transaction
from lab4_extraction_batch import categories
from lab4_extraction_batch.extractor import Extraction


def _choices() -> list[str]:
    return [f"- {row.code} {row.name} ({row.group}, VAT {row.vat_rate} %)" for row in categories.category_table()]


def _suggestion(code: str | None) -> str:
    if code is None:
        return "Keyword match: none"
    row = categories.category(code)
    return f"Keyword match: {row.code} {row.name}"


def document_prompt(extraction: Extraction) -> str:
    """Return the prompt that asks the model for a receipt's category."""
    return "\n".join(["Choose the booking category of this receipt.", "Categories:", *_choices(),
                      _suggestion(extraction.category_code), f"Receipt {extraction.filename}:", extraction.text])


def transaction_prompt(transaction: Transaction) -> str:
    """Return the prompt that asks the model for a bank transaction's category."""
    text = f"{transaction.counterparty} {transaction.purpose}"
    return "\n".join(["Choose the booking category of this bank transaction.", "Categories:", *_choices(),
                      _suggestion(categories.category_for(text)),
                      f"Transaction: {transaction.booked_on} {transaction.amount} {transaction.currency.code} {text}"])
