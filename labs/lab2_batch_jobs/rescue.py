"""The rescue: find the jobs a hard limit left behind and say how far each one got.

A job still in its running state long after its task's hard limit cannot
be running any more: the worker child that ran it was killed, and nothing
will ever finish it. This module lists such jobs, with the items each one
wrote, and can put them in their failed state so a person can act on them.

    python -m lab2_batch_jobs.rescue                 # list the stuck jobs
    python -m lab2_batch_jobs.rescue --mark-failed   # and end them as failed

It reads the database that KONTOR_DATABASE_URL names (for the workshop's:
eval "$(budgetlab stack env)"). Nothing here is yours to change in this lab.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass

from django.db import DatabaseError
from kontor.celery_app import app  # sets Django up, as in every Kontor task module
from kontor.books.models import BatchJob


@dataclass
class Stuck:
    """One job a hard limit left behind."""

    label: str
    job: BatchJob
    written: int
    unit: str
    hard_limit: float  # seconds, as the task declares it

    def progress(self) -> str:
        return f"{self.written:,} of {self.job.items_total:,} {self.unit}"


def subsystems() -> list[tuple[str, type[BatchJob], object, str, str]]:
    """Return (label, job model, task, related name of the written rows, unit) for the three kinds of job."""
    from lab2_batch_jobs import agent_runs, imports, uploads

    return [("import job", imports.ImportJob, imports.import_csv, "transactions", "rows"),
            ("bulk upload", uploads.BulkUpload, uploads.process_upload, "documents", "files"),
            ("agent run", agent_runs.AgentRun, agent_runs.run_agent, "results", "steps")]


def stuck_jobs(now: datetime.datetime | None = None) -> list[Stuck]:
    """Return the jobs still in their running state that started longer ago than their task's hard limit."""
    from django.utils import timezone
    from kontor.books.selectors import jobs_stuck

    now = now or timezone.now()
    found = []
    for label, model, task, related, unit in subsystems():
        # The task's own declaration is the source of truth for its budget.
        hard = task.time_limit or app.conf.task_time_limit
        if not hard:
            continue  # without a hard limit nothing kills the task, so "too old" has no line to cross
        older_than = datetime.timedelta(seconds=hard)
        for job in jobs_stuck(model, older_than, now):
            found.append(Stuck(label, job, getattr(job, related).count(), unit, float(hard)))
    return found


def mark_failed(stuck: Stuck) -> None:
    """End a stuck job as failed, saying how far it got before the hard limit stopped it."""
    from kontor.books.services import job_mark_failed

    job_mark_failed(stuck.job, f"stopped by the {stuck.hard_limit:g} s hard limit after {stuck.progress()}; "
                               "found by the rescue")


def report(found: list[Stuck], now: datetime.datetime) -> list[str]:
    """Return the lines that describe the stuck jobs, one per job and a summary."""
    lines = []
    for stuck in found:
        age = (now - stuck.job.started_at).total_seconds()
        lines.append(f"{stuck.label} {stuck.job.pk}: '{stuck.job.status}' for {age:,.0f} s "
                     f"(hard limit {stuck.hard_limit:g} s), {stuck.progress()} written, "
                     f"{_plural(len(stuck.job.failures), 'item')} failed")
    lines.append(f"{_plural(len(found), 'job')} stuck past the hard limit")
    return lines


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab2_batch_jobs.rescue",
                                     description="List batch jobs stuck past their task's hard limit.")
    parser.add_argument("--mark-failed", action="store_true",
                        help="also put each stuck job in its failed state, with how far it got")
    args = parser.parse_args(argv)
    try:
        from django.utils import timezone

        now = timezone.now()
        found = stuck_jobs(now)
        for line in report(found, now):
            print(line)
        if args.mark_failed:
            for stuck in found:
                mark_failed(stuck)
            print(f"marked {len(found)} failed")
    except DatabaseError as exc:
        print(f"error: cannot read the jobs: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
