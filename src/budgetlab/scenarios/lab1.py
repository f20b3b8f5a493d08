"""Lab 1's live scenario: Kontor's five masters from the learner's entrypoint, two long jobs, and the budgets in force.

`budgetlab run 1` copies the seeded database, starts the five masters of
the learner's entrypoint.sh (their settings.py, their tasks) and submits
two jobs the way Kontor's web process does: a 40-file bulk OCR upload and
one customer's reminder sweep. It shows how far each job got and what
stopped it, then an effective-budget table for every task on its queue.

How the table is read is lab 1's story (budgetlab.stories.lab1).
"""

from __future__ import annotations

import importlib
import inspect as pyinspect
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab.harness.rig import Rig
from budgetlab.harness.workers import WorkerTree
from budgetlab.inworker import clock
from budgetlab.paths import logs_dir
from budgetlab.stories.lab1 import SLUG, Budget, Worker, budget, from_log, lab_tasks, number, queue_of
from budgetlab.stories.lab1 import start_masters, workers

UPLOAD_FILES = 40
BULK_TASK, SWEEP_TASK = "documents.bulk_ocr", "sweeps.remind_overdue_invoices"
# The sweep's customer: the fifth company, with 62 invoices past due.
SWEEP_COMPANY_INDEX = 4
# How long the jobs may take in wall seconds before the scenario stops waiting.
WAIT_SECONDS = 60.0
LAYER_STYLE = {"worker flag": "bold yellow", "none": "bold red"}
LAYER_NOTES = {
    "bound settings": "Celery 5.7 copied the worker's settings into the task when it loaded it.",
    "sent settings": "Celery 5.7 put the producer's settings into the message's timelimit header.",
}


def _budget_text(found: Budget) -> Text:
    if not found.seconds:
        return Text("no limit", style="bold red")
    return Text.assemble(f"{found.seconds:>5.0f} s ", (found.layer, LAYER_STYLE.get(found.layer, "cyan")))


# `run 1` plays its jobs on a clock at most 100 times faster than production: each of their items is a
# database write whose real milliseconds the clock stretches too. At 200x, CI rehearsal #26, starting beside
# a site build and a check, stretched the fixed jobs (about 400 s each) past their 600 s soft limit.
SLOWEST_SCALE = 0.01


def play(target_dir: Path, console: Console) -> int:
    """Start the masters, run the two jobs, print what happened and the effective budgets; stop all of it."""
    with clock.running_at(clock.at_most_as_fast_as(SLOWEST_SCALE)):
        return _play(target_dir, console)


def _play(target_dir: Path, console: Console) -> int:
    import celery

    console.print(f"Five Celery masters from {target_dir.name}/{SLUG}/entrypoint.sh, then a {UPLOAD_FILES}-file bulk OCR "
                  "upload and one customer's reminder sweep, on a fresh copy of the seeded database.")
    console.print(Text(f"{clock.describe()}; Celery {celery.__version__}", style="dim"))
    with Rig(target_dir, label="run1") as rig:
        tree = _start_masters(rig, console)
        try:
            app, tasks = _producer(target_dir, rig.database_url, rig.broker_url)
            with rig.django():
                jobs = _run_jobs(app, tasks, tree, console)
            _print_outcomes(jobs, console)
            found = workers(app, expected=tree.ready_hostnames())
            _print_settings(found, jobs, console)
            table, layers = _budget_table(app, tasks, found, _headers(app, tasks), submitted={BULK_TASK, SWEEP_TASK})
            console.print(table)
            for layer in ("bound settings", "sent settings"):
                if layer in layers:
                    console.print(f"[dim]{layer}: {LAYER_NOTES[layer]}[/]")
            console.print("[dim]Read from the running system: each message's timelimit header, inspect registered, "
                          "inspect stats, each master's command line, inspect conf.[/]")
            return 0
        finally:
            with console.status("stopping the five masters …"):
                tree.stop(grace=3.0)


def _start_masters(rig: Rig, console: Console) -> WorkerTree:
    log = logs_dir() / "run-1.log"
    started = time.monotonic()
    with console.status("starting the five masters of entrypoint.sh …"):
        tree = start_masters(rig, [f"{SLUG}.tasks"], log, {"KONTOR_WORKER_NAME": f"run-{uuid.uuid4().hex[:6]}"})
    console.print(f"  {len(tree.ready_hostnames())} masters ready in {time.monotonic() - started:.1f} s wall "
                  f"(log: {log})")
    return tree


def _producer(target_dir: Path, database_url: str, broker_url: str):
    """Set this process up as Kontor's web process: the learner's settings and tasks, the run's servers."""
    os.environ.update(KONTOR_CELERY_SETTINGS=f"{SLUG}.settings", KONTOR_TASK_MODULES=f"{SLUG}.tasks",
                      KONTOR_BROKER_URL=broker_url, KONTOR_RESULT_BACKEND=broker_url,
                      KONTOR_DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="kontor.settings")
    sys.path.insert(0, str(target_dir))
    from celery.signals import before_task_publish

    from kontor.celery_app import app

    before_task_publish.connect(_remember_header, weak=False)
    tasks = importlib.import_module(f"{SLUG}.tasks")
    app.loader.import_default_modules()
    return app, tasks


_HEADERS: dict[str, list] = {}


def _remember_header(sender=None, headers=None, **_kwargs) -> None:
    if headers:
        _HEADERS[headers["id"]] = list(headers.get("timelimit") or (None, None))


@dataclass
class Job:
    """One submitted job and what became of it."""

    task: str
    what: str
    unit: str
    total: int
    result: object
    count: object  # () -> items done so far
    submitted: float
    done: int = 0
    finished_wall: float | None = None
    soft_limit: float | None = None    # the soft limit the worker logged for it, if it met one
    ran: float | None = None           # production seconds from "received" to its end, from the worker's log

    @property
    def elapsed(self) -> float:
        if self.ran is not None:
            return self.ran
        end = self.finished_wall if self.finished_wall is not None else time.monotonic()
        return clock.to_production(end - self.submitted)


def _run_jobs(app, tasks, tree: WorkerTree, console: Console) -> list[Job]:
    """Submit the upload and the sweep as Kontor's web process does, and follow them to their end."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from kontor import datagen
    from kontor.books.models import BulkUpload, Company, Invoice
    from kontor.books.selectors import invoices_due

    company = Company.objects.order_by("pk")[SWEEP_COMPANY_INDEX]
    upload = BulkUpload.objects.create(company=Company.objects.order_by("pk").first(),
                                       files=datagen.document_batch(7, UPLOAD_FILES))
    due = invoices_due(datagen.TODAY).filter(company=company).count()
    jobs = [
        Job(BULK_TASK, f"upload #{upload.pk}", "files", UPLOAD_FILES,
            tasks.bulk_ocr.delay(upload.pk),
            lambda: BulkUpload.objects.values_list("items_done", flat=True).get(pk=upload.pk), time.monotonic()),
        Job(SWEEP_TASK, f"{company.name}'s overdue invoices", "invoices", due,
            tasks.remind_overdue_invoices.delay(company.pk, datagen.TODAY.isoformat()),
            lambda: Invoice.objects.filter(company=company, status=Invoice.Status.OVERDUE).count(),
            time.monotonic()),
    ]
    deadline = time.monotonic() + WAIT_SECONDS
    console.print()
    with Progress(TextColumn("  {task.description:<31}"), BarColumn(bar_width=12), MofNCompleteColumn(),
                  TextColumn("{task.fields[unit]:<8}"), TextColumn("[cyan]{task.fields[elapsed]:>4.0f} s[/]"),
                  TextColumn("{task.fields[state]}"), console=console) as progress:
        bars = [progress.add_task(job.task, total=job.total, unit=job.unit, elapsed=0.0, state="") for job in jobs]
        while time.monotonic() < deadline and any(job.finished_wall is None for job in jobs):
            for job, bar in zip(jobs, bars, strict=True):
                if job.finished_wall is None and job.result.ready():
                    job.finished_wall = time.monotonic()
                job.done = job.count()
                progress.update(bar, completed=job.done, elapsed=job.elapsed, state=_state(job))
            time.sleep(0.1)
        for job, bar in zip(jobs, bars, strict=True):
            job.soft_limit, job.ran = from_log(tree.text(), job.result.id)
            job.done = job.count()
            progress.update(bar, completed=job.done, elapsed=job.elapsed, state=_state(job))
    return jobs


def _state(job: Job) -> str:
    if job.finished_wall is None:
        return "[dim]running[/]"
    if job.result.successful():
        return "[green]finished[/]"
    return "[red]stopped[/]"


def _headers(app, tasks) -> dict[str, list]:
    """Publish one message per task to a queue nobody reads, and keep the timelimit header each one carried.

    The messages are built by the same apply_async as real ones, so their
    headers are what Kontor's web process would send; they are deleted
    afterwards.
    """
    import redis

    dead_end = f"budgetlab-run1-headers-{uuid.uuid4().hex[:6]}"
    found = {}
    for task in lab_tasks(app, tasks):
        arity = len(pyinspect.signature(task.run).parameters)
        result = task.apply_async(args=[0] * arity, queue=dead_end)
        found[task.name] = _HEADERS.get(result.id, [None, None])
    redis.Redis.from_url(app.conf.broker_url).delete(dead_end)
    return found


def _budget_table(app, tasks, workers: dict[str, Worker], headers: dict[str, list],
                  submitted: set[str]) -> tuple[Table, set[str]]:
    """Return the effective-budget table (every task under its queue, each limit with its layer) and the layers used."""
    layers: set[str] = set()
    table = Table(title="\neffective budgets, by queue (* the two jobs above)", title_justify="left",
                  header_style="bold", box=None, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("task", no_wrap=True)
    table.add_column("soft limit, set by", no_wrap=True)
    table.add_column("hard limit, set by", no_wrap=True)
    producer_settings = {key: app.conf.get(key) for key in ("task_soft_time_limit", "task_time_limit")}
    current = None
    for task in lab_tasks(app, tasks):
        queue = queue_of(app, task.name)
        if queue != current:
            table.add_row(Text(f"{queue} queue", style="underline"), "", "")
            current = queue
        worker = workers.get(queue)
        # A star, not only bold: a transcript or a terminal without styles shows no bold.
        name = Text(f"{task.name} *", style="bold") if task.name in submitted else Text(task.name)
        if worker is None:
            table.add_row(name, Text("no master consumes this queue", style="red"), "")
            continue
        limits = worker.tasks.get(task.name, {})
        header = headers.get(task.name, [None, None])
        soft, hard = (budget(index, task.name, header, limits, worker, producer_settings) for index in (1, 0))
        layers |= {soft.layer, hard.layer}
        table.add_row(name, _budget_text(soft), _budget_text(hard))
    return table, layers


def _print_settings(workers: dict[str, Worker], jobs: list[Job], console: Console) -> None:
    """Say what settings.py promises, as the documents master loaded it, and whether the jobs met that promise."""
    worker = workers.get("documents") or next(iter(workers.values()), None)
    if worker is None:
        return
    soft = number(worker.settings.get("task_soft_time_limit"))
    console.print(f"\n  settings.py, as the workers loaded it (inspect conf): task_soft_time_limit = "
                  f"{_seconds(soft)}, task_time_limit = {_seconds(worker.settings.get('task_time_limit'))}")
    if any(job.soft_limit is not None and job.soft_limit != soft for job in jobs):
        console.print("  [bold]The jobs met another limit than the settings promise. Which layer set it?[/]")


def _seconds(value) -> str:
    seconds = number(value)
    return f"{seconds:g} s" if seconds else "not set"


def _print_outcomes(jobs: list[Job], console: Console) -> None:
    for job in jobs:
        head = f"  [bold]{job.task}[/] ({job.what}):"
        if job.finished_wall is None:
            console.print(f"{head} [yellow]still running[/] after {job.elapsed:.0f} s; the run stopped waiting")
        elif job.result.successful():
            console.print(f"{head} [green]finished[/], all {job.total} {job.unit} in {job.elapsed:.0f} s")
        elif job.soft_limit is not None:
            console.print(f"{head} [red]stopped by SoftTimeLimitExceeded at {job.soft_limit:g} s[/] "
                          f"after {job.done} of {job.total} {job.unit}")
        else:
            console.print(f"{head} [red]failed[/] with {job.result.result!r} after {job.done} of "
                          f"{job.total} {job.unit}")
