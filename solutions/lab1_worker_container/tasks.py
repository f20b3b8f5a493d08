"""Kontor's background tasks, one module for all five queues (read it; nothing to change here).

About half of the tasks choose their own time limits in the decorator. The
other half choose none, so they run with whatever budget their worker
gives them. `task_routes` in settings.py sends each task to its queue by
the start of its name.
"""

from __future__ import annotations

import datetime

from kontor.books.models import AgentRun, AgentStep, BulkUpload, Currency, Document, Invoice, Transaction
from kontor.books.selectors import currency_rate, invoices_due
from kontor.books.services import job_item_done, job_mark_completed, job_start
from kontor.celery_app import app
from kontor.clients import model_complete, ocr_read

# The bare queryset loops below are lab 3's subject, not this lab's; `noqa: BL003`
# keeps `budgetlab audit` from reporting them here.

# imports: bank data coming in.


@app.task(name="imports.transactions_from_csv")
def transactions_from_csv(import_job_id: int) -> str:
    """Book every row of an uploaded bank export as a transaction."""
    from kontor.books.models import ImportJob

    job = ImportJob.objects.get(pk=import_job_id)
    rows = job.csv_text.strip().splitlines()[1:]
    job_start(job, len(rows))
    euro = Currency.objects.get(code="EUR")
    for row in rows:
        booked_on, amount, _currency, counterparty, purpose = row.split(";")
        Transaction.objects.create(company=job.company, booked_on=booked_on, amount=amount.replace(",", "."),
                                   currency=euro, counterparty=counterparty, purpose=purpose, import_job=job)
        job_item_done(job)
    job_mark_completed(job)
    return job.message


@app.task(name="imports.refresh_currency_rates", soft_time_limit=60, time_limit=90)
def refresh_currency_rates() -> int:
    """Touch every currency so the cached rates are read again (one fast query per currency)."""
    for currency in Currency.objects.all():  # noqa: BL003
        currency.save(update_fields=["rate_to_eur"])
    return Currency.objects.count()


@app.task(name="imports.match_payments", soft_time_limit=240, time_limit=300)
def match_payments(company_id: int) -> int:
    """Mark open invoices as paid when a transaction of the same amount names their number."""
    matched = 0
    for invoice in Invoice.objects.filter(company_id=company_id, status=Invoice.Status.OPEN).iterator():  # noqa: BL003
        if Transaction.objects.filter(company_id=company_id, amount=invoice.amount,
                                      purpose__contains=invoice.number).exists():
            invoice.status = Invoice.Status.PAID
            invoice.save(update_fields=["status"])
            matched += 1
    return matched


# documents: receipts and invoices uploaded by Kontor's customers.


@app.task(name="documents.bulk_ocr")
def bulk_ocr(upload_id: int) -> str:
    """Read every file of a bulk upload (up to 95) with OCR, then ask the model about each one."""
    upload = BulkUpload.objects.get(pk=upload_id)
    job_start(upload, len(upload.files))
    for file in upload.files:
        text = ocr_read(file["content"], key=file["filename"])
        model_complete(f"Which ledger category fits this receipt?\n{text}", key=file["filename"])
        Document.objects.create(company=upload.company, filename=file["filename"], content=file["content"],
                                ocr_text=text, bulk_upload=upload)
        job_item_done(upload)
    job_mark_completed(upload)
    return upload.message


@app.task(name="documents.read_receipt", soft_time_limit=90, time_limit=120)
def read_receipt(document_id: int) -> str:
    """Read one uploaded receipt with OCR and store its text."""
    document = Document.objects.get(pk=document_id)
    document.ocr_text = ocr_read(document.content, key=document.filename)
    document.save(update_fields=["ocr_text"])
    return document.ocr_text


# sweeps: scheduled walks over whole querysets.


@app.task(name="sweeps.remind_overdue_invoices")
def remind_overdue_invoices(company_id: int, today: str) -> int:
    """Mark a company's overdue invoices and let the model draft the first reminder for each."""
    reminded = 0
    for invoice in invoices_due(datetime.date.fromisoformat(today)).filter(company_id=company_id).iterator():  # noqa: BL003
        model_complete(f"Draft a polite first reminder for invoice {invoice.number}", key=invoice.number)
        invoice.status = Invoice.Status.OVERDUE
        invoice.reminder_level += 1
        invoice.save(update_fields=["status", "reminder_level"])
        reminded += 1
    return reminded


@app.task(name="sweeps.convert_invoice_amounts", soft_time_limit=300, time_limit=360)
def convert_invoice_amounts() -> int:
    """Fill in the euro amount of every invoice that has none yet."""
    converted = 0
    for invoice in Invoice.objects.filter(amount_eur__isnull=True).select_related("currency").iterator():  # noqa: BL003
        invoice.amount_eur = invoice.amount * currency_rate(invoice.currency.code)
        invoice.save(update_fields=["amount_eur"])
        converted += 1
    return converted


@app.task(name="sweeps.purge_empty_documents")
def purge_empty_documents() -> int:
    """Delete documents that were uploaded without any content."""
    deleted, _ = Document.objects.filter(content="").delete()
    return deleted


# agent-batch: agents that work through long lists on their own.


@app.task(name="agents.batch.run_agent")
def run_agent(run_id: int) -> str:
    """Work through an agent run's steps, one model call each."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    for index, step in enumerate(run.steps):
        output = model_complete(f"{run.goal}\nStep: {step}", key=f"run-{run.pk}-{index}")
        AgentStep.objects.create(run=run, index=index, output=output)
        job_item_done(run)
    job_mark_completed(run)
    return run.message


@app.task(name="agents.batch.summarise_month", soft_time_limit=1200, time_limit=1500)
def summarise_month(company_id: int, month: str) -> str:
    """Ask the model for a summary of a company's month, one call per week of transactions."""
    first = datetime.date.fromisoformat(f"{month}-01")
    summaries = []
    for week in range(5):
        start = first + datetime.timedelta(weeks=week)
        count = Transaction.objects.filter(company_id=company_id, booked_on__gte=start,
                                           booked_on__lt=start + datetime.timedelta(weeks=1)).count()
        summaries.append(model_complete(f"Summarise {count} transactions", key=f"summary-{company_id}-{month}-{week}"))
    return "\n".join(summaries)


# agent-interactive: a person in Kontor's app waits for the answer.


@app.task(name="agents.interactive.answer_question")
def answer_question(question: str) -> str:
    """Answer a customer's question about their books while they wait."""
    return model_complete(question, key=f"question-{question}")


@app.task(name="agents.interactive.suggest_category", soft_time_limit=20, time_limit=30)
def suggest_category(transaction_id: int) -> str:
    """Suggest a ledger category for one transaction while the person looks at it."""
    transaction = Transaction.objects.get(pk=transaction_id)
    return model_complete(f"Category for {transaction.counterparty}: {transaction.purpose}",
                          key=f"transaction-{transaction.pk}")
