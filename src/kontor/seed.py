"""Fill a freshly migrated database with the generator's world for one seed."""

from __future__ import annotations

from django.db import transaction

from kontor import datagen
from kontor.books.models import Company, Currency, Document, Invoice, Transaction

SEED = 7
# Poisoned due invoices, by position in sweep order: one near the start, as in the story.
POISON = {1: "bad-email", 140: "fee-over-amount", 233: "bad-email", 301: "fee-over-amount"}


@transaction.atomic
def seed(seed_number: int = SEED) -> dict[str, int]:
    """Create companies, transactions, documents and invoices; return the counts."""
    companies = Company.objects.bulk_create(Company(name=name) for name in datagen.COMPANIES)
    currencies = {c.code: c for c in Currency.objects.all()}
    Transaction.objects.bulk_create(
        Transaction(company=companies[i % len(companies)], currency=currencies[row.pop("currency")], **row)
        for i, row in enumerate(datagen.transactions(seed_number, 2000)))
    Document.objects.bulk_create(
        Document(company=companies[i % len(companies)], **row)
        for i, row in enumerate(datagen.documents(seed_number, 500)))
    Invoice.objects.bulk_create(
        Invoice(company=companies[i % len(companies)], number=s.number, customer=s.customer,
                customer_email=s.customer_email, amount=s.amount, currency=currencies[s.currency],
                issued_on=s.issued_on, due_on=s.due_on)
        for i, s in enumerate(datagen.invoices(seed_number, due=312, not_due=40, poison_positions=POISON)))
    return {"companies": Company.objects.count(), "transactions": Transaction.objects.count(),
            "documents": Document.objects.count(), "invoices": Invoice.objects.count()}
