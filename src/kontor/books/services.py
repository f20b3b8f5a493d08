"""Writes: how batch jobs start, record item failures and reach a final state."""

from __future__ import annotations

from django.db import InterfaceError, OperationalError, connection
from django.db.models import F
from django.utils import timezone

from kontor.books.models import BatchJob


def job_start(job: BatchJob, items_total: int) -> None:
    """Put a job in its running state with the number of items it will work through."""
    job.status = job.RUNNING
    job.items_total = items_total
    job.started_at = timezone.now()
    job.save(update_fields=["status", "items_total", "started_at"])


def job_item_done(job: BatchJob) -> None:
    """Count one finished item, in the database at once, so the count survives a killed worker."""
    type(job).objects.filter(pk=job.pk).update(items_done=F("items_done") + 1)
    job.items_done += 1


def job_record_failure(job: BatchJob, item: str, error: BaseException | str) -> None:
    """Record that one item failed, and why, without stopping the job."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}".rstrip(": ")
    job.failures = [*job.failures, {"item": item, "error": text}]
    job.save(update_fields=["failures"])


def job_mark_completed(job: BatchJob) -> None:
    """Finish a job that went through all its items (some may have failed)."""
    job.refresh_from_db(fields=["items_done"])
    failed = len(job.failures)
    job.status = job.COMPLETED
    job.message = f"{job.items_done} of {job.items_total} items done, {failed} failed"
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "message", "finished_at"])


def job_mark_failed(job: BatchJob, message: str) -> None:
    """Finish a job that could not go on, with a message a person can act on.

    This runs right after an interruption such as a soft time limit, which
    may have landed in the middle of a query and left the database
    connection mid-command. Outside a transaction such a connection is
    discarded and the write made on a fresh one, so the job still ends.
    """
    job.status = job.FAILED
    job.message = message
    job.finished_at = timezone.now()
    try:
        job.save(update_fields=["status", "message", "finished_at"])
    except (OperationalError, InterfaceError):
        if connection.in_atomic_block:
            raise
        connection.close()
        job.save(update_fields=["status", "message", "finished_at"])
