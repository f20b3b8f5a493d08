"""Lab 1's live scenario: Kontor's five masters from the learner's entrypoint, two long jobs, and the budgets in force.

`budgetlab run 1` copies the seeded database, starts the five masters of
the learner's entrypoint.sh (their settings.py, their tasks) and submits
two jobs the way Kontor's web process does: a 40-file bulk OCR upload and
one customer's reminder sweep. It shows how far each job got and what
stopped it, then an effective-budget table for every task on its queue.

The table is read from the running system, never worked out from the
files: the `timelimit` header of each task's message (captured as it is
published), the limits each worker reports for the task (`inspect
registered`), the pool's defaults (`inspect stats`), the master's command
line, and the settings the worker loaded (`inspect conf`). A value is
taken from the header, else from the task on the worker, else from the
pool, which is the order a worker reads them in for each message; the
layer named is the place that value was found in.
"""

from __future__ import annotations

import datetime
import importlib
import inspect as pyinspect
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab import clock, database
from budgetlab.errors import BudgetlabError
from budgetlab.paths import state_dir
from budgetlab.stack.leases import RedisLease
from budgetlab.workers import Environment, WorkerTree

SLUG = "lab1_inherited_limit"
QUEUES = ("imports", "documents", "sweeps", "agent-batch", "agent-interactive")
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


@dataclass
class Worker:
    """What one running master says about itself."""

    host: str
    pid: int | None = None
    pool: tuple[float, float] = (0.0, 0.0)          # inspect stats: the pool's default soft and hard limit
    flags: dict[str, float] = field(default_factory=dict)   # --soft-time-limit / --time-limit on its command line
    settings: dict = field(default_factory=dict)    # inspect conf
    tasks: dict[str, dict[str, float]] = field(default_factory=dict)  # inspect registered, with limits


@dataclass
class Budget:
    """One limit of one task on one queue, and the layer it was found in."""

    seconds: float | None
    layer: str

    def text(self) -> Text:
        if not self.seconds:
            return Text("no limit", style="bold red")
        return Text.assemble(f"{self.seconds:>5.0f} s ", (self.layer, LAYER_STYLE.get(self.layer, "cyan")))


def play(target_dir: Path, console: Console) -> int:
    """Start the masters, run the two jobs, print what happened and the effective budgets; stop all of it."""
    import celery

    console.print(f"[bold]Lab 1 · the limit nobody chose[/]  ({clock.describe()}, Celery {celery.__version__})")
    console.print(f"Five Celery masters from {target_dir.name}/{SLUG}/entrypoint.sh, then a {UPLOAD_FILES}-file bulk OCR "
                  "upload and one customer's reminder sweep, on a fresh copy of the seeded database.")
    lease = RedisLease()
    url = tree = None
    try:
        url = database.scratch_database("run1")
        tree = _start_masters(target_dir, url, lease.url, console)
        app, tasks = _producer(target_dir, url, lease.url)
        jobs = _run_jobs(app, tasks, tree, console)
        _print_outcomes(jobs, console)
        workers = _workers(app)
        _print_settings(workers, jobs, console)
        table, layers = _budget_table(app, tasks, workers, _headers(app, tasks), submitted={BULK_TASK, SWEEP_TASK})
        console.print(table)
        for layer in ("bound settings", "sent settings"):
            if layer in layers:
                console.print(f"[dim]{layer}: {LAYER_NOTES[layer]}[/]")
        console.print("[dim]Read from the running system: each message's timelimit header, inspect registered, "
                      "inspect stats, each master's command line, inspect conf.[/]")
        return 0
    finally:
        if tree is not None:
            with console.status("stopping the five masters …"):
                tree.stop(grace=3.0)
        _close_django()
        if url is not None:
            database.drop(url.rsplit("/", 1)[1])
        lease.release()


def _start_masters(target_dir: Path, database_url: str, broker_url: str, console: Console) -> WorkerTree:
    entrypoint = target_dir / SLUG / "entrypoint.sh"
    if not entrypoint.exists():
        raise BudgetlabError(f"{entrypoint} is missing; restore it with 'budgetlab reset 1'")
    env = Environment(target_dir=target_dir, database_url=database_url, broker_url=broker_url,
                      modules=[f"{SLUG}.tasks"],
                      extra={"PYTHON": sys.executable, "KONTOR_WORKER_NAME": f"run-{uuid.uuid4().hex[:6]}"})
    log = state_dir() / "logs" / "run-1.log"
    tree = WorkerTree(["bash", str(entrypoint)], env, log, expect_ready=len(QUEUES), cwd=target_dir / SLUG)
    started = time.monotonic()
    with console.status("starting the five masters of entrypoint.sh …"):
        try:
            tree.start(timeout=90)
        except BudgetlabError as exc:
            raise BudgetlabError(f"entrypoint.sh did not start five masters: {exc}") from None
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
            job.soft_limit, job.ran = _from_log(tree, job.result.id)
            job.done = job.count()
            progress.update(bar, completed=job.done, elapsed=job.elapsed, state=_state(job))
    return jobs


def _state(job: Job) -> str:
    if job.finished_wall is None:
        return "[dim]running[/]"
    if job.result.successful():
        return "[green]finished[/]"
    return "[red]stopped[/]"


_LOG_LINE = re.compile(r"^\[(?P<at>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): \w+/[\w-]+\] (?P<text>.*)$", re.MULTILINE)


def _from_log(tree: WorkerTree, task_id: str) -> tuple[float | None, float | None]:
    """Return the soft limit a job met and how long it ran, both in production seconds, from the worker's log.

    The run time is from the master's "received" line to the soft-limit
    line, or to the line that ends the task; with one idle child per
    master, the task starts as it is received.
    """
    soft = received = ended = None
    for line in _LOG_LINE.finditer(tree.text()):
        text = line["text"]
        if task_id not in text:
            continue
        at = datetime.datetime.strptime(line["at"], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        limit = re.match(r"Soft time limit \(([\d.]+)s\) exceeded", text)
        if limit:
            soft, ended = float(limit[1]), at
        elif text.endswith(" received"):
            received = at
        elif re.search(r"\] (succeeded in|raised unexpected|failed)", text) or text.startswith("Hard time limit"):
            ended = at if ended is None else ended
    ran = clock.to_production(ended - received) if received is not None and ended is not None else None
    return soft, ran


def _workers(app) -> dict[str, Worker]:
    """Ask every running master about itself; return them by the queue each consumes."""
    inspect = app.control.inspect(timeout=3.0, limit=len(QUEUES))
    queues = inspect.active_queues() or {}
    stats = inspect.stats() or {}
    confs = inspect.conf() or {}
    registered = inspect.registered("soft_time_limit", "time_limit") or {}
    workers = {}
    for host, consumed in queues.items():
        worker = Worker(host)
        info = stats.get(host, {})
        worker.pid = info.get("pid")
        timeouts = info.get("pool", {}).get("timeouts") or (0, 0)
        worker.pool = (float(timeouts[0] or 0), float(timeouts[1] or 0))
        worker.flags = _command_line_limits(worker.pid)
        worker.settings = confs.get(host, {})
        worker.tasks = {name: limits for name, limits in map(_registered_entry, registered.get(host, []))}
        for queue in consumed:
            workers[queue["name"]] = worker
    return workers


def _command_line_limits(pid: int | None) -> dict[str, float]:
    """Return the time-limit flags on a running master's command line, read from /proc."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except (OSError, TypeError):
        return {}
    found = {}
    for index, word in enumerate(argv):
        for flag in ("--soft-time-limit", "--time-limit"):
            if word == flag and index + 1 < len(argv):
                found[flag] = float(argv[index + 1])
            elif word.startswith(flag + "="):
                found[flag] = float(word.split("=", 1)[1])
    return found


def _registered_entry(entry: str) -> tuple[str, dict[str, float]]:
    """Split "name [soft_time_limit=600 time_limit=900]" into the name and its limits."""
    name, _, rest = entry.partition(" [")
    limits = {}
    for pair in rest.rstrip("]").split():
        key, _, value = pair.partition("=")
        try:
            limits[key] = float(value)
        except ValueError:
            pass
    return name, limits


def _headers(app, tasks) -> dict[str, list]:
    """Publish one message per task to a queue nobody reads, and keep the timelimit header each one carried.

    The messages are built by the same apply_async as real ones, so their
    headers are what Kontor's web process would send; they are deleted
    afterwards.
    """
    import redis

    dead_end = f"budgetlab-run1-headers-{uuid.uuid4().hex[:6]}"
    found = {}
    for task in _lab_tasks(app, tasks):
        arity = len(pyinspect.signature(task.run).parameters)
        result = task.apply_async(args=[0] * arity, queue=dead_end)
        found[task.name] = _HEADERS.get(result.id, [None, None])
    redis.Redis.from_url(app.conf.broker_url).delete(dead_end)
    return found


def _lab_tasks(app, tasks) -> list:
    """Return the lab's tasks in queue order, then by name."""
    def order(task) -> tuple[int, str]:
        queue = _queue_of(app, task.name)
        return (QUEUES.index(queue) if queue in QUEUES else len(QUEUES), task.name)

    return sorted((task for task in app.tasks.values() if task.__module__ == tasks.__name__), key=order)


def _queue_of(app, name: str) -> str:
    route = app.amqp.router.route({}, name, (), {})
    queue = route.get("queue")
    return getattr(queue, "name", queue) or app.conf.task_default_queue


def _budget(index: int, name: str, header: list, task_limits: dict[str, float], worker: Worker,
            producer_settings) -> Budget:
    """Find one limit (0: hard, 1: soft, the header's order) where the worker finds it, and name its layer."""
    import celery

    key = ("time_limit", "soft_time_limit")[index]
    setting = ("task_time_limit", "task_soft_time_limit")[index]
    flag = ("--time-limit", "--soft-time-limit")[index]
    binds_settings = celery.VERSION[:2] >= (5, 7)
    if header[index]:
        value = float(header[index])
        from_settings = binds_settings and value == _number(producer_settings.get(setting))
        return Budget(value, "sent settings" if from_settings else _task_layer(name, key, value, worker.settings))
    if task_limits.get(key):
        value = task_limits[key]
        from_settings = binds_settings and value == _number(worker.settings.get(setting))
        return Budget(value, "bound settings" if from_settings else _task_layer(name, key, value, worker.settings))
    value = worker.pool[1 - index]
    if not value:
        return Budget(None, "none")
    if worker.flags.get(flag) == value:
        return Budget(value, "worker flag")
    if _number(worker.settings.get(setting)) == value:
        return Budget(value, "settings")
    return Budget(value, "worker")


def _task_layer(name: str, key: str, value: float, settings: dict) -> str:
    """Name a limit set on the task itself: by `task_annotations` when they give this value, else by its decorator."""
    annotations = settings.get("task_annotations")
    # Celery accepts one mapping or a sequence of them; a mapping's keys are task names or "*".
    for mapping in annotations if isinstance(annotations, (list, tuple)) else [annotations]:
        if isinstance(mapping, dict):
            for pattern in (name, "*"):
                entry = mapping.get(pattern)
                if isinstance(entry, dict) and _number(entry.get(key)) == value:
                    return "annotation"
    return "decorator"


def _number(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


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
    for task in _lab_tasks(app, tasks):
        queue = _queue_of(app, task.name)
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
        soft, hard = (_budget(index, task.name, header, limits, worker, producer_settings) for index in (1, 0))
        layers |= {soft.layer, hard.layer}
        table.add_row(name, soft.text(), hard.text())
    return table, layers


def _print_settings(workers: dict[str, Worker], jobs: list[Job], console: Console) -> None:
    """Say what settings.py promises, as the documents master loaded it, and whether the jobs met that promise."""
    worker = workers.get("documents") or next(iter(workers.values()), None)
    if worker is None:
        return
    soft = _number(worker.settings.get("task_soft_time_limit"))
    console.print(f"\n  settings.py, as the workers loaded it (inspect conf): task_soft_time_limit = "
                  f"{_seconds(soft)}, task_time_limit = {_seconds(worker.settings.get('task_time_limit'))}")
    if any(job.soft_limit is not None and job.soft_limit != soft for job in jobs):
        console.print("  [bold]The jobs met another limit than the settings promise. Which layer set it?[/]")


def _seconds(value) -> str:
    number = _number(value)
    return f"{number:g} s" if number else "not set"


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


def _close_django() -> None:
    if "django.db" in sys.modules:
        from django.db import connections

        connections.close_all()
