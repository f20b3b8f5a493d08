"""Lab 2's live scenario: three batch jobs outrun their budgets on a real worker, and the soft limit gets swallowed.

One worker with three children runs a CSV import, a bulk upload and an
agent run, each too big for its budget, with the learner's code. The view
shows rows being written, the soft limit firing, the item that gets
blamed for it, the loop carrying on and the hard kill, in production
seconds next to wall seconds. It ends with what Kontor's users see, the
worker's log lines at the limits, and the rescue's list of stuck jobs.
Everything runs against a scratch database and is stopped and dropped at
the end, Ctrl-C included.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from budgetlab import clock, database
from budgetlab.errors import BudgetlabError
from kontor.latency import MODEL_CALL, keyed_rng
from budgetlab.stack.leases import RedisLease
from budgetlab.workers import Environment, WorkerTree, celery_argv, unique_hostname

SLUG = "lab2_swallowed_limit"
SEED = 7
ROWS, MALFORMED, FILES, STEPS = 1772, 12, 95, 60
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): (\w+)/([\w-]+)\] (.*)$")
TASK_LINE = re.compile(r"(Soft|Hard) time limit \(([\d.]+)s\) exceeded for ([\w.]+)\[")
KILL_LINE = re.compile(r"Process '([\w-]+)' pid:(\d+) exited with 'signal 9 \(SIGKILL\)'")
END_LINE = re.compile(r"Task ([\w.]+)\[[\w-]+\] (raised unexpected: (\w+)|succeeded)")
ITEM = re.compile(r"\b(row|file|step)[- ](\d+)")
# Waiting ends at the latest hard limit plus this, in wall seconds, or at WATCH_CAP for tasks without one.
MARGIN, WATCH_CAP = 2.0, 60.0


@dataclass
class Subsystem:
    """One of the three jobs of the scenario, and what the view knows about it."""

    label: str
    module: str
    task_name: str
    unit: str
    item: str  # "row", as in the lab's log lines and latency keys
    job: object = None
    result: object = None
    soft: float | None = None  # production seconds, from the learner's task
    hard: float | None = None
    written: int = 0
    written_at_soft: int | None = None
    child: str = ""  # the pool process that ran it, learned from its log lines

    def count(self) -> int:
        related = {"row": "transactions", "file": "documents", "step": "results"}[self.item]
        return getattr(self.job, related).count()


def _subsystems() -> list[Subsystem]:
    return [Subsystem("import job", "imports", "kontor.imports.import_csv", "rows", "row"),
            Subsystem("bulk upload", "uploads", "kontor.uploads.process_upload", "files", "file"),
            Subsystem("agent run", "agent_runs", "kontor.agents.run_agent", "steps", "step")]


# Where each job meets a slow stretch of the model provider: (first item, how many, production seconds a call).
# The stretch starts well before the soft limit even on a busy machine and outlasts it, so the limit lands
# in a model call, as it nearly always does in production. On the lab clock a database write takes 200 times
# its share of production time, and a limit landing inside one would tell a different story.
SLOW_STRETCH = {"row": (150, 12, 40.0), "file": (30, 10, 40.0), "step": (20, 8, 30.0)}


def latency_plan() -> dict:
    """Return the scenario's latencies, in production seconds.

    A bank row's category prompt is short (1.2 s), a receipt's is long (9 to
    13 s a file), agent steps follow the measured distribution of model calls
    (median 5.5 s, p99 35 s), and each job meets one slow stretch.
    """
    rng = random.Random(f"{SEED}:lab2-files")
    keys = {f"file-{n}": round(rng.uniform(9.0, 13.0), 2) for n in range(1, FILES + 1)}
    keys.update({f"step-{n}": round(MODEL_CALL.sample(keyed_rng(SEED, f"model:step-{n}")), 2)
                 for n in range(1, STEPS + 1)})
    for item, (first, count, seconds) in SLOW_STRETCH.items():
        keys.update({f"{item}-{n}": seconds for n in range(first, first + count)})
    return {"seed": SEED, "model": {"default": 1.2, "keys": keys}, "ocr": {"default": 0.03}}


def _point_django_at(url: str) -> str:
    """Point this process's Django at the scratch database; return the database name it used before."""
    os.environ["KONTOR_DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
    import django
    from django.db import connections

    django.setup()
    connection = connections["default"]
    connection.close()
    previous = connection.settings_dict["NAME"]
    connection.settings_dict["NAME"] = url.rsplit("/", 1)[1]
    return previous


def _create_jobs(subsystems: list[Subsystem]) -> None:
    from kontor import datagen
    from kontor.books.models import AgentRun, BulkUpload, Company, ImportJob

    company = Company.objects.order_by("id").first()
    csv_text, _ = datagen.import_csv(SEED, ROWS, MALFORMED)
    subsystems[0].job = ImportJob.objects.create(company=company, filename="umsaetze-2026-q1.csv", csv_text=csv_text)
    subsystems[1].job = BulkUpload.objects.create(company=company, files=datagen.document_batch(SEED, FILES))
    subsystems[2].job = AgentRun.objects.create(
        company=company, goal="Prepare the VAT return for the first quarter of 2026",
        steps=[f"Check booking {n} of the quarter against its receipt" for n in range(1, STEPS + 1)])


def _read_budgets(subsystems: list[Subsystem]) -> None:
    """Read each task's declared limits from the learner's module, the source of truth."""
    for sub in subsystems:
        module = importlib.import_module(f"{SLUG}.{sub.module}")
        task = next((t for t in vars(module).values() if getattr(t, "name", None) == sub.task_name), None)
        if task is not None:
            sub.soft, sub.hard = task.soft_time_limit, task.time_limit


@dataclass
class Event:
    """One thing the worker's log says, at a production time since the tasks were received."""

    seconds: float
    who: str
    text: str
    style: str = ""


class LogView:
    """What the worker's log says so far: events for the live view and the raw lines at the limits.

    The log is read again from the top on every refresh; times are production
    seconds since the worker received the first task.
    """

    def __init__(self, text: str, subsystems: list[Subsystem]):
        self.events: list[Event] = []
        self.proof: list[str] = []
        self._by_task = {sub.task_name: sub for sub in subsystems}
        self._by_item = {sub.item: sub for sub in subsystems}
        self._subsystems = subsystems
        self._soft_fired: set[str] = set()
        self._started: datetime.datetime | None = None
        for line in text.splitlines():
            if match := LOG_LINE.match(line):
                self._read(*match.groups())

    def _read(self, stamp: str, level: str, process: str, message: str) -> None:
        moment = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")
        if self._started is None and " received" in message:
            self._started = moment
        seconds = clock.to_production((moment - self._started).total_seconds()) if self._started else 0.0
        raw = f"[{stamp[11:]}: {process}] {message}"
        if limit := TASK_LINE.search(message):
            self._limit(seconds, limit, raw)
        elif kill := KILL_LINE.search(message):
            sub = next((s for s in self._subsystems if s.child == kill.group(1)), None)
            self._add(seconds, sub.label if sub else "worker",
                      f"the worker reaps {kill.group(1)} (pid {kill.group(2)}): killed by SIGKILL", "bold red", raw)
        elif end := END_LINE.search(message):
            if sub := self._by_task.get(end.group(1)):
                sub.child = sub.child or process
                raised = end.group(3)
                self._add(seconds, sub.label, f"task raised {raised}" if raised else "task succeeded",
                          "red" if raised == "TimeLimitExceeded" else "green", raw)
        elif item := ITEM.search(message):
            sub = self._by_item[item.group(1)]
            sub.child = sub.child or process
            if "failed" in message:
                self._item_failed(seconds, sub, f"{item.group(1)} {item.group(2)}", message, raw)

    def _limit(self, seconds: float, limit: re.Match, raw: str) -> None:
        kind, budget, task = limit.group(1), float(limit.group(2)), limit.group(3)
        if (sub := self._by_task.get(task)) is None:
            return
        if kind == "Soft":
            self._soft_fired.add(sub.label)
            self._add(seconds, sub.label, f"soft limit ({budget:g} s) fired", "yellow", raw)
        else:
            self._add(seconds, sub.label, f"hard limit ({budget:g} s): SIGTERM to the child, SIGKILL 0.1 s later",
                      "bold red", raw)

    def _item_failed(self, seconds: float, sub: Subsystem, item: str, message: str, raw: str) -> None:
        if "SoftTimeLimitExceeded" in message:
            self._add(seconds, sub.label, f"{message}  ← blamed on {item}", "bold yellow", raw)
        elif sub.label in self._soft_fired:
            self._add(seconds, sub.label, f"{message}  (the loop carries on)", "yellow")

    def _add(self, seconds: float, who: str, text: str, style: str, raw: str | None = None) -> None:
        self.events.append(Event(seconds, who, text, style))
        if raw:
            self.proof.append(raw)

    def soft_fired(self, sub: Subsystem) -> bool:
        return sub.label in self._soft_fired


def _status(sub: Subsystem) -> Text:
    job = sub.job
    if job.status == job.FAILED:
        return Text(job.status, style="yellow")
    if job.is_final:
        return Text(job.status, style="green")
    return Text(job.status, style="bold red" if sub.result is not None and sub.result.ready() else "")


def _budget(sub: Subsystem) -> str:
    return "/".join("-" if not value else f"{value:g}" for value in (sub.soft, sub.hard)) + " s"


def _live(subsystems: list[Subsystem], log: LogView, sent_at: float) -> Group:
    wall = time.monotonic() - sent_at
    head = Text.assemble(("t = ", "dim"), (f"{clock.to_production(wall):,.0f} s", "bold"), (" production · ", "dim"),
                         (f"{wall:.2f} s", "bold"), (" wall", "dim"))
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("job", "soft/hard", "status", "written", "failed", "after soft"):
        table.add_column(column, no_wrap=True)
    for sub in subsystems:
        job = sub.job
        since = "" if sub.written_at_soft is None else f"+{sub.written - sub.written_at_soft:,} {sub.unit}"
        table.add_row(f"{sub.label} {job.pk}", _budget(sub), _status(sub),
                      f"{sub.written:,} of {job.items_total:,} {sub.unit}", str(len(job.failures)),
                      Text(since, style="yellow" if since and not since.startswith("+0 ") else ""))
    events = Table(box=None, pad_edge=False, show_header=False)
    events.add_column(justify="right", no_wrap=True)
    events.add_column(justify="right", style="dim", no_wrap=True)
    events.add_column(style="bold", no_wrap=True)
    events.add_column()
    for event in sorted(log.events, key=lambda e: e.seconds)[-12:]:
        events.add_row(f"{event.seconds:,.0f} s", f"{clock.to_wall(event.seconds):.2f} s", event.who,
                       Text(event.text, style=event.style))
    return Group(head, Text(""), table, Text(""), Text("worker log (production s, wall s)", style="bold"), events,
                 Text(""))


def _refresh(subsystems: list[Subsystem], tree: WorkerTree) -> LogView:
    log = LogView(tree.text(), subsystems)
    for sub in subsystems:
        sub.job.refresh_from_db()
        sub.written = sub.count()
        if log.soft_fired(sub) and sub.written_at_soft is None:
            sub.written_at_soft = sub.written
    return log


def _watch(subsystems: list[Subsystem], tree: WorkerTree, console: Console, sent_at: float) -> LogView:
    limits = [sub.hard for sub in subsystems if sub.hard]
    cap = sent_at + (clock.to_wall(max(limits)) + MARGIN if len(limits) == len(subsystems) else WATCH_CAP)
    log = _refresh(subsystems, tree)
    with Live(_live(subsystems, log, sent_at), console=console, refresh_per_second=10) as live:
        while time.monotonic() < min(cap, sent_at + WATCH_CAP):
            log = _refresh(subsystems, tree)
            live.update(_live(subsystems, log, sent_at))
            if all(sub.result.ready() for sub in subsystems):
                killed = sum(1 for sub in subsystems if type(sub.result.result).__name__ == "TimeLimitExceeded")
                # The pool logs the SIGKILL a moment after it reports the hard limit.
                if len(tree.killed_children()) >= killed or time.monotonic() > cap:
                    break
            time.sleep(0.1)
        log = _refresh(subsystems, tree)
        live.update(_live(subsystems, log, sent_at))
    return log


def _product_view(subsystems: list[Subsystem]) -> Table:
    table = Table(title="What Kontor's users see now", title_justify="left", title_style="bold", box=None,
                  pad_edge=False, header_style="bold")
    for column in ("job", "status", "written", "message"):
        table.add_column(column)
    for sub in subsystems:
        job = sub.job
        message = job.message or ("none: a spinner, forever" if not job.is_final else "")
        table.add_row(f"{sub.label} {job.pk}", _status(sub), f"{sub.written:,} of {job.items_total:,} {sub.unit}",
                      Text(message, style="" if job.message else "red"))
    return table


def _rescue(env: Environment, subsystems: list[Subsystem], console: Console) -> None:
    """Run the lab's rescue command against the scratch database, once every hard limit has passed."""
    from django.utils import timezone

    starts = [sub.job.started_at for sub in subsystems if sub.job.started_at]
    if starts:
        oldest_limit = clock.to_wall(max(sub.hard or 0 for sub in subsystems))
        wait = (min(starts) + datetime.timedelta(seconds=oldest_limit) - timezone.now()).total_seconds()
        time.sleep(max(0.0, min(wait + 0.05, MARGIN)))
    command = [sys.executable, "-m", f"{SLUG}.rescue"]
    console.print(Text(f"$ python -m {SLUG}.rescue", style="bold"))
    result = subprocess.run(command, env=env.variables(), capture_output=True, text=True, timeout=60)
    output = (result.stdout + result.stderr).strip()
    console.print(Text(output or "(no output)", style="" if result.returncode == 0 else "red"))


def _ending(sub: Subsystem) -> str:
    """Return what went wrong with one job's ending, in the story's terms, or "" when it ended as it should."""
    job, result = sub.job, sub.result
    raised = type(result.result).__name__ if result.ready() and result.state == "FAILURE" else ""
    if raised == "TimeLimitExceeded":
        what = "no final status, and never will: the hard limit killed the worker child that ran it"
    elif not result.ready():
        what = f"no final status, and its task had not ended {MARGIN:g} s (wall) after its hard limit"
    elif result.state == "SUCCESS" and job.status != job.COMPLETED:
        what = f"'{job.status}', yet its task reported SUCCESS: the caller never learns it ran out of time"
    elif raised in ("OperationalError", "InterfaceError") and not job.is_final:
        what = (f"no final status: the soft limit cut a database query short, and the next write on that "
                f"connection failed ({raised}); see 'One more trap' on the lab page")
    elif raised and raised != "SoftTimeLimitExceeded":
        what = f"'{job.status}', and its task raised {raised}"
    elif not job.is_final or job.status == job.COMPLETED:
        what = f"'{job.status}' although it ran out of time"
    else:
        return ""
    return f"{sub.label} {job.pk}: {what}"


def _closing(subsystems: list[Subsystem], tree: WorkerTree, console: Console) -> None:
    problems = [text for sub in subsystems if (text := _ending(sub))]
    if not problems and not tree.killed_children():
        console.print(Text("All three jobs ended failed and say how far they got; their tasks ended inside the soft "
                           "window, and no worker child was killed.", style="bold green"))
        return
    for text in problems:
        console.print(Text(text, style="bold red"))
    console.print(f"Change labs/{SLUG}/ and run again; 'budgetlab check 2' grades it, 'budgetlab hint 2' helps.")


def play(target_dir: Path, console: Console) -> int:
    """Run the scenario with the code under target_dir/lab2_swallowed_limit; return 0 when it ran."""
    if not (target_dir / SLUG).is_dir():
        raise BudgetlabError(f"{target_dir / SLUG} is missing; restore it with 'budgetlab reset 2'")
    subsystems = _subsystems()
    url = database.scratch_database("lab2run")
    name = url.rsplit("/", 1)[1]
    folder = Path(tempfile.mkdtemp(prefix="budgetlab-lab2-"))
    previous = tree = app = lease = None
    environment = os.environ.get("KONTOR_DATABASE_URL")
    sys.path.insert(0, str(target_dir))
    try:
        previous = _point_django_at(url)
        _create_jobs(subsystems)
        plan = folder / "plan.json"
        plan.write_text(json.dumps(latency_plan()))
        lease = RedisLease()
        broker = lease.url
        queue = f"lab2-{uuid.uuid4().hex[:8]}"
        env = Environment(target_dir=target_dir, database_url=url, broker_url=broker,
                          modules=[f"{SLUG}.{sub.module}" for sub in subsystems], latency_plan=plan)
        console.print(Text("Lab 2 · the signal your loop already caught", style="bold"))
        console.print(Text(f"One worker, three children, the code in {target_dir.name}/{SLUG}/; "
                           f"{clock.describe()}.", style="dim"))
        tree = WorkerTree(celery_argv([queue], unique_hostname("lab2"), 3), env, folder / "worker.log")
        tree.start()
        _read_budgets(subsystems)
        from celery import Celery

        app = Celery("lab2-run", broker=broker, backend=broker, set_as_current=False)
        app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
        sent_at = time.monotonic()
        for sub in subsystems:
            sub.result = app.send_task(sub.task_name, args=[sub.job.pk], queue=queue)
        log = _watch(subsystems, tree, console, sent_at)
        console.print()
        console.print(_product_view(subsystems))
        console.print()
        console.print(Text("The worker's log at the limits", style="bold"))
        for line in log.proof or ["(nothing: no limit was reached)"]:
            console.print(Text(line, style="red" if "SIGKILL" in line or "Hard" in line else ""), soft_wrap=True)
        console.print()
        _rescue(env, subsystems, console)
        console.print()
        _closing(subsystems, tree, console)
        return 0
    except KeyboardInterrupt:
        console.print()
        console.print(Text("interrupted: stopping the worker and dropping the scratch database", style="yellow"))
        return 130
    finally:
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)  # cleaning up is not to be interrupted
        try:
            if tree is not None:
                tree.stop(grace=1.0)
            if app is not None:
                app.close()
            if lease is not None:
                lease.release()
            if previous is not None:
                from django.db import connections

                connections["default"].close()
                connections["default"].settings_dict["NAME"] = previous
            database.drop(name)
            if environment is None:
                os.environ.pop("KONTOR_DATABASE_URL", None)
            else:
                os.environ["KONTOR_DATABASE_URL"] = environment
            sys.path.remove(str(target_dir))
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            signal.signal(signal.SIGINT, interrupt)
