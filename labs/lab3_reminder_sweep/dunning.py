"""Kontor's dunning services: what the sweeps do to one invoice (nothing to change here).

Two services, each applied to one invoice at a time:

- `invoice_mark_overdue` has the model draft a short notice to the
  customer, marks the invoice overdue, values it in euros and sends the
  notice. It takes one model call per invoice, about 5.5 s in production.
- `invoice_send_reminder` raises the invoice's reminder level to the one
  its days past due call for, charges that level's fee, and sends the
  reminder letter.

A letter checks its address when it is written, as the mail service
would refuse it later, so an invoice with a malformed address raises
`ValidationError`. The database refuses a reminder fee larger than the
invoice (the CHECK constraint `invoice_fee_within_amount`).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

from django.core.validators import validate_email
from django.db.models import Q, QuerySet

from kontor.books.models import Invoice
from kontor.books.selectors import currency_rate
from kontor.clients import model_complete

CENT = Decimal("0.01")
# (days past due, reminder level, fee for that level): a first reminder a week after the due date,
# then every two weeks; the fee grows with the level, as Kontor's terms say.
REMINDER_STEPS = ((7, 1, Decimal("2.50")), (21, 2, Decimal("5.00")), (35, 3, Decimal("7.50")))


@dataclass
class Letter:
    """An email to a customer; an address the mail service would refuse is rejected at once."""

    to: str
    subject: str
    body: str

    def __post_init__(self) -> None:
        validate_email(self.to)


def letter_send(letter: Letter) -> None:
    """Hand a letter to the mail service (a stand-in: the address was checked when it was written)."""


def reminders_due(today: datetime.date) -> QuerySet[Invoice]:
    """Return the unpaid invoices whose reminder level is below what their days past due call for."""
    wanted = Q()
    for days, level, _fee in REMINDER_STEPS:
        wanted |= Q(due_on__lte=today - datetime.timedelta(days=days), reminder_level__lt=level)
    return (Invoice.objects.filter(wanted, status__in=[Invoice.Status.OPEN, Invoice.Status.OVERDUE])
            .order_by("due_on", "id"))


def reminder_step(invoice: Invoice, today: datetime.date) -> tuple[int, Decimal]:
    """Return the reminder level and fee an invoice's days past due call for (0 and no fee before the first)."""
    late = (today - invoice.due_on).days
    level, fee = 0, Decimal("0")
    for days, step_level, step_fee in REMINDER_STEPS:
        if late >= days:
            level, fee = step_level, step_fee
    return level, fee


def invoice_mark_overdue(invoice: Invoice, today: datetime.date) -> None:
    """Mark one invoice overdue, value it in euros and send the customer a notice the model drafted."""
    prompt = (f"Write three friendly sentences to {invoice.customer}: invoice {invoice.number} over "
              f"{invoice.amount} {invoice.currency.code} was due on {invoice.due_on:%d.%m.%Y} and is still open.")
    notice = Letter(invoice.customer_email, f"Rechnung {invoice.number} ist überfällig",
                    model_complete(prompt, key=f"invoice-{invoice.pk}"))
    invoice.status = Invoice.Status.OVERDUE
    invoice.amount_eur = (invoice.amount * currency_rate(invoice.currency.code)).quantize(CENT)
    invoice.save(update_fields=["status", "amount_eur"])
    letter_send(notice)


def invoice_send_reminder(invoice: Invoice, today: datetime.date) -> None:
    """Record the reminder an invoice is due for, with its fee, then send the letter."""
    invoice.reminder_level, invoice.reminder_fee = reminder_step(invoice, today)
    invoice.save(update_fields=["reminder_level", "reminder_fee"])
    letter_send(Letter(invoice.customer_email, f"Zahlungserinnerung {invoice.reminder_level}: {invoice.number}",
                       f"Bitte begleichen Sie Rechnung {invoice.number} zuzüglich "
                       f"{invoice.reminder_fee} EUR Mahngebühr."))
