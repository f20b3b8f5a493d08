"""Bulk upload: up to 95 receipts at once, each read by OCR and categorised by the model.

An upload sits in `processing` while the task works through its files and
ends `completed` after the loop. A scan that OCR cannot read is recorded
against the upload, and the other files still go in.

A full upload of slow model calls runs past the task's soft time limit,
and the upload then stays `processing` for good.

Goal: when the soft limit fires, the upload ends `failed` with a message
that says how many files it stored, such as "timed out after 41 of 95
files", and the task itself still ends with SoftTimeLimitExceeded. An
unreadable file still costs only that file.
"""

import logging

from kontor.books.models import BulkUpload, Category, Document
from kontor.books.services import job_item_done, job_mark_completed, job_record_failure, job_start
from kontor.celery_app import app
from kontor.clients import ocr_read

from lab2_batch_jobs.model_calls import ask_model

log = logging.getLogger(__name__)


# 95 files at the model's median of about 5.5 s need close to nine minutes:
# ten minutes covers a typical full upload, a batch of slow calls does not fit
# and must end failed. The hard limit leaves five minutes to wind down.
@app.task(name="kontor.uploads.process_upload", soft_time_limit=600, time_limit=900)
def process_upload(upload_id: int) -> None:
    """Read, categorise and store every file of a bulk upload."""
    upload = BulkUpload.objects.get(pk=upload_id)
    categories = {c.code: c for c in Category.objects.all()}
    job_start(upload, len(upload.files))
    for number, file in enumerate(upload.files, start=1):
        # TODO: the upload must reach a final state, as the goal above says.
        try:
            store_file(upload, number, file, categories)
        except Exception as exc:
            log.warning("file %d (%s) failed: %r", number, file["filename"], exc)
            job_record_failure(upload, f"file {number}", exc)
    job_mark_completed(upload)


def store_file(upload: BulkUpload, number: int, file: dict, categories: dict) -> None:
    """Read one file, ask the model for its category and store it as a Document."""
    text = ocr_read(file["content"], key=f"file-{number}")
    answer = ask_model(f"Category code for this receipt: {text}", key=f"file-{number}")
    Document.objects.create(company=upload.company, filename=file["filename"], content=file["content"],
                            ocr_text=text, category=categories.get(answer or ""), bulk_upload=upload)
    job_item_done(upload)
