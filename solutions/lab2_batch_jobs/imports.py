"""CSV import: every row of an uploaded bank export becomes a Transaction.

A job sits in `importing` while the task works through the rows, one model
call per row for the category, and ends `completed` after the loop. Bank
exports contain broken rows (a date like 31.02., an amount like 12,3,4), so
each row is isolated: a bad row is recorded against the job and the import
goes on with the next.

A large file runs past the task's soft time limit. Run `budgetlab run 2`
and watch what becomes of the job: it never leaves `importing`.

Goal: when the soft limit fires, the job ends `failed` with a message that
says how many rows it imported, such as "timed out after 340 of 1,772
rows", and the task itself still ends with SoftTimeLimitExceeded. A broken
row still costs only that row, and a file that fits in the budget still
ends `completed`.
"""

import datetime
import logging
from decimal import Decimal, InvalidOperation

from celery.exceptions import SoftTimeLimitExceeded
from kontor.books.models import Category, Currency, ImportJob, Transaction
from kontor.books.services import job_item_done, job_mark_completed, job_mark_failed, job_record_failure, job_start
from kontor.celery_app import app

from lab2_batch_jobs.model_calls import ask_model

log = logging.getLogger(__name__)


# Ten minutes imports a 2,000-row export at the usual pace of the category
# model; a larger file should be split, and the job has to say so. The five
# minutes up to the hard limit are for ending the job properly.
@app.task(name="kontor.imports.import_csv", soft_time_limit=600, time_limit=900)
def import_csv(job_id: int) -> None:
    """Import every row of an uploaded CSV file into the company's transactions."""
    job = ImportJob.objects.get(pk=job_id)
    lines = job.csv_text.splitlines()[1:]  # the first line is the header
    lookups = {"currencies": {c.code: c for c in Currency.objects.all()},
               "categories": {c.code: c for c in Category.objects.all()}}
    job_start(job, len(lines))
    try:
        for number, line in enumerate(lines, start=1):
            try:
                import_row(job, number, line, lookups)
            except SoftTimeLimitExceeded:
                raise  # not this item's fault: the runtime is asking the task to leave
            except Exception as exc:
                log.warning("row %d failed: %r", number, exc)
                job_record_failure(job, f"row {number}", exc)
        job_mark_completed(job)
    except SoftTimeLimitExceeded:
        # Wherever the limit landed (an item's call or query, the handler that records a
        # failure, the final write), end the job where a person can see how far it got,
        # then re-raise, so the task ends inside the soft window, before the hard kill.
        job_mark_failed(job, f"timed out after {job.items_done:,} of {job.items_total:,} rows")
        raise


def import_row(job: ImportJob, number: int, line: str, lookups: dict) -> None:
    """Write one CSV row as a Transaction; ValueError when the row is malformed."""
    booked_on, amount, code, counterparty, purpose = line.split(";")
    try:
        fields = {"booked_on": datetime.date.fromisoformat(booked_on),
                  "amount": Decimal(amount.replace(",", ".")),
                  "currency": lookups["currencies"][code]}
    except (ValueError, InvalidOperation, KeyError):
        raise ValueError(f"malformed row: {line}") from None
    answer = ask_model(f"Category code for a payment to {counterparty}: {purpose}", key=f"row-{number}")
    Transaction.objects.create(company=job.company, counterparty=counterparty, purpose=purpose, import_job=job,
                               category=lookups["categories"].get(answer or ""), **fields)
    job_item_done(job)
