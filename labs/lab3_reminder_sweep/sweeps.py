"""Kontor's nightly invoice sweeps: mark overdue invoices, then send payment reminders.

Celery beat starts both sweeps every night. Each walks a queryset and
applies one dunning service (see dunning.py) to every invoice in it.
Every night both sweeps end as failed tasks, and the next morning most
invoices past their due date look as they did the evening before.

Goal: a bad invoice is logged with its id and counted, the sweep carries
on with the rest, and a run with failures says so in one WARNING line;
a time limit still ends the sweep. Both sweeps share the helper in
rowwise.py.
"""

from __future__ import annotations

import datetime

from django.db import transaction

from kontor.books.selectors import invoices_due
from kontor.celery_app import app
from kontor.datagen import TODAY
from lab3_reminder_sweep.dunning import invoice_mark_overdue, invoice_send_reminder, reminders_due


def _day(today: str | None) -> datetime.date:
    # The workshop's "today" is fixed, so the same invoices are due on every machine.
    return datetime.date.fromisoformat(today) if today else TODAY


# One model call per invoice (about 5.5 s): a night's backlog of a few hundred invoices takes
# half an hour; the soft limit leaves room for the slow tail, the hard limit five minutes to stop.
@app.task(name="sweeps.invoices_mark_overdue", soft_time_limit=3600, time_limit=3900)
def invoices_mark_overdue(today: str | None = None) -> None:
    """Mark every open invoice past its due date overdue, and notify its customer."""
    day = _day(today)
    # TODO: one invoice that raises must not end the sweep.
    for invoice in invoices_due(day).select_related("currency").iterator():
        invoice_mark_overdue(invoice, day)


# No model call, only the database: a few hundred reminders take seconds; 600/900 is the house default.
@app.task(name="sweeps.reminders_send", soft_time_limit=600, time_limit=900)
def reminders_send(today: str | None = None) -> None:
    """Send every reminder that is due, with its fee."""
    day = _day(today)
    # One transaction holds the row locks, so two overlapping runs never remind an invoice twice.
    with transaction.atomic():
        # TODO: one invoice that raises, here or in the database, must not end the sweep.
        for invoice in reminders_due(day).select_for_update(skip_locked=True).iterator():
            invoice_send_reminder(invoice, day)
