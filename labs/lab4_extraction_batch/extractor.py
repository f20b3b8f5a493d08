"""The OCR extractor: reads an uploaded document and suggests its category.

Context for lab 4, not yours to change: it calls categories.py for every
document, through the module, so whatever categories.py does is what the
extractor gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from kontor.books.models import Document
from kontor.clients import ocr_read
from lab4_extraction_batch import categories


@dataclass
class Extraction:
    """What the extractor learned about one document."""

    document_id: int
    filename: str
    text: str
    category_code: str | None
    vat_rate: Decimal | None


def extract(document: Document) -> Extraction:
    """Read the document's text and match it against the category keywords."""
    text = ocr_read(document.content, key=f"doc-{document.pk}")
    code = categories.category_for(text)
    vat_rate = categories.category(code).vat_rate if code else None
    return Extraction(document.pk, document.filename, text, code, vat_rate)
