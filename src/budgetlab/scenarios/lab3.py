"""Lab 3 live: Kontor's two invoice sweeps, three nights in a row, on a real worker with the learner's code.

Each night sends the overdue sweep, then the reminder sweep, by name as
Celery beat would, to one worker running labs/lab3_poisoned_queryset on a
scratch copy of the seeded data. After every run the scenario reads the
invoices and the worker's log, and it feeds the log records to a small
log-based alert: a logging handler that counts WARNING summaries with
failures, as a log shipper and an alert rule would in production. It
ends with the numbers Kontor's dashboard would show.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab import clock, database
from budgetlab.paths import repo_root, state_dir
from budgetlab.stack.leases import RedisLease
from budgetlab.workers import Environment, WorkerTree, celery_argv, unique_hostname

SLUG = "lab3_poisoned_queryset"
NIGHTS = 3
SWEEPS = (("sweeps.invoices_mark_overdue", "overdue"), ("sweeps.reminders_send", "reminders"))
# The demo pins every model call at 1 production second, so a full night of notices takes seconds, not minutes.
MODEL_SECONDS = 1.0
TODAY = "2026-03-31"  # kontor.datagen.TODAY, repeated so this module needs no Django in the CLI process
FIRST_REMINDER_DAYS = 7

RECORD = re.compile(r"^\[(?P<time>[\d\- :,]+): (?P<level>[A-Z]+)/(?P<process>[^\]]+)\] (?P<message>.*)$")
SUMMARY = re.compile(r"\bprocessed=(?P<processed>\d+),?\s+failed=(?P<failed>\d+)\b")
TASK_ID = re.compile(r"\[[0-9a-f]{8}-[0-9a-f-]{27}\]")


class SummaryAlert(logging.Handler):
    """A log-based alert: fires on every summary line at WARNING or above that reports failed rows."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.fired: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        match = SUMMARY.search(record.getMessage())
        if match and int(match["failed"]) > 0:
            self.fired.append(f"night {record.night} · {record.getMessage()}")


@dataclass
class Run:
    """One sweep on one night, as the scenario saw it."""

    night: int
    label: str
    state: str
    error: str
    changed: int
    left: int
    first_left: str
    records: list[tuple[str, str]]

    def summary(self) -> tuple[str, str] | None:
        return next(((level, message) for level, message in self.records if SUMMARY.search(message)), None)


def play(target_dir: Path, console: Console) -> int:
    """Run the nights, show each run, the worker's loud log lines, the alert and the dashboard."""
    from celery import Celery

    console.print(Text("Lab 3 · One bad row", style="bold"))
    console.print(f"Kontor's two invoice sweeps, {NIGHTS} nights in a row, as Celery beat sends them: one worker "
                  f"with {target_dir.name}/{SLUG}, a scratch copy of the seeded data.")
    console.print(Text(f"{clock.describe()}; model calls pinned at {MODEL_SECONDS:g} s each", style="dim"))
    logs = state_dir() / "logs"
    logs.mkdir(exist_ok=True)
    worker = client = name = lease = None
    try:
        url = database.scratch_database("run3")
        name = url.rsplit("/", 1)[1]
        with tempfile.TemporaryDirectory(prefix="budgetlab-run3-") as scratch:
            plan = Path(scratch) / "plan.json"
            plan.write_text(json.dumps({"seed": 7, "model": {"default": MODEL_SECONDS}}))
            lease = RedisLease()
            broker = lease.url
            queue = f"run3-{uuid.uuid4().hex[:8]}"
            env = Environment(target_dir=target_dir, database_url=url, broker_url=broker,
                              modules=[f"{SLUG}.sweeps"], latency_plan=plan)
            worker = WorkerTree(celery_argv([queue], unique_hostname("run3")), env, logs / "run-3-worker.log")
            with console.status("starting a worker with your sweeps …"):
                worker.start()
            client = Celery("run3", broker=broker, backend=broker, set_as_current=False)
            client.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"])
            runs = _nights(client, worker, queue, url, console)
            _show_runs(console, runs)
            _show_loud_lines(console, runs)
            _show_alert(console, runs)
            _show_dashboard(console, url, runs)
            console.print(Text(f"worker log: {_shown(worker.log)}", style="dim"))
    finally:
        if worker is not None:
            worker.stop()
        if client is not None:
            client.close()
        if lease is not None:
            lease.release()
        if name:
            database.drop(name)
    return 0


def _shown(path: Path) -> str:
    """Return a path relative to the checkout when it lies inside it, so the output reads the same everywhere."""
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)


def _nights(client, worker: WorkerTree, queue: str, url: str, console: Console) -> list[Run]:
    runs = []
    offset = 0
    for night in range(1, NIGHTS + 1):
        for task, label in SWEEPS:
            before = _invoices(url)
            with console.status(f"night {night}: {label} …"):
                result = client.send_task(task, queue=queue)
                result.get(timeout=120, propagate=False)
                ended = re.compile(rf"\[{result.id}\] (succeeded|raised)|exceeded for \S+\[{result.id}\]")
                _wait(lambda: ended.search(worker.text()))
            text = worker.text()
            records = _records(text[offset:])
            offset = len(text)
            after = _invoices(url)
            left = _left(url, task)
            runs.append(Run(night, label, result.state,
                            "" if result.state == "SUCCESS" else type(result.result).__name__,
                            sum(after[pk] != row for pk, row in before.items()), len(left),
                            left[0] if left else "-", records))
    return runs


def _wait(predicate, seconds: float = 5.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)


def _records(text: str) -> list[tuple[str, str]]:
    """Return (level, first line) for every record of a worker log excerpt."""
    return [(match["level"], match["message"]) for match in map(RECORD.match, text.splitlines()) if match]


def _connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=5)


def _invoices(url: str) -> dict[int, tuple]:
    with _connect(url) as conn:
        rows = conn.execute("SELECT id, status, reminder_level, reminder_fee, amount_eur FROM books_invoice").fetchall()
    return {row[0]: row[1:] for row in rows}


def _left(url: str, task: str) -> list[str]:
    """Return, in sweep order, the invoice numbers the next run of this sweep will meet first."""
    if task.endswith("overdue"):
        where = "status = 'open' AND due_on < %(today)s"
    else:
        where = ("status IN ('open', 'overdue') AND reminder_level = 0 "
                 "AND due_on <= %(today)s::date - %(days)s")
    with _connect(url) as conn:
        rows = conn.execute(f"SELECT number FROM books_invoice WHERE {where} ORDER BY due_on, id",
                            {"today": TODAY, "days": FIRST_REMINDER_DAYS}).fetchall()
    return [row[0] for row in rows]


def _show_runs(console: Console, runs: list[Run]) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("night", "sweep", "result", "changed", "still waiting", "next in line"):
        table.add_column(column, no_wrap=True)
    for run in runs:
        result = Text("SUCCESS", style="green") if run.state == "SUCCESS" else Text(
            f"{run.state} {run.error}".strip(), style="red")
        table.add_row(str(run.night), run.label, result, str(run.changed), str(run.left), run.first_left)
    console.print()
    console.print(table)


def _show_loud_lines(console: Console, runs: list[Run]) -> None:
    """Show what the worker logged at WARNING and above, the same lines folded together with a count."""
    loud = Counter()
    for run in runs:
        for level, message in run.records:
            if level in ("WARNING", "ERROR", "CRITICAL"):
                loud[(level, TASK_ID.sub("[…]", message))] += 1
    console.print()
    console.print(Text("What the worker logged at WARNING and above:", style="bold"))
    if not loud:
        console.print("  nothing")
    for (level, message), count in list(loud.items())[:10]:
        style = "red" if level != "WARNING" else "yellow"
        console.print(Text.assemble("  ", (f"{level:<7}", style), f" {message}", (f"  ×{count}", "dim")))
    if len(loud) > 10:
        console.print(Text(f"  … and {len(loud) - 10} more different lines", style="dim"))


def _show_alert(console: Console, runs: list[Run]) -> None:
    """Ship the worker's records into a logger that carries the alert handler, as a log pipeline would."""
    alert = SummaryAlert()
    shipped = logging.getLogger("budgetlab.lab3.shipped")
    shipped.propagate = False
    shipped.setLevel(logging.DEBUG)
    shipped.addHandler(alert)
    try:
        for run in runs:
            for level, message in run.records:
                record = logging.makeLogRecord({"name": "worker", "levelname": level, "msg": message,
                                                "levelno": logging.getLevelName(level)})
                record.night = run.night
                if isinstance(record.levelno, int):
                    shipped.handle(record)
    finally:
        shipped.removeHandler(alert)
    console.print()
    console.print(Text("Log-based alert (a logging handler counting WARNING summaries with failed > 0):",
                       style="bold"))
    if not alert.fired:
        console.print("  silent: not one summary line to count, so nothing to alert on")
        return
    console.print(Text(f"  fired {len(alert.fired)} times", style="yellow"))
    for line in alert.fired[:6]:
        console.print(f"  {line}")


def _show_dashboard(console: Console, url: str, runs: list[Run]) -> None:
    with _connect(url) as conn:
        due, overdue, reminded = conn.execute(
            "SELECT count(*) FILTER (WHERE status <> 'paid' AND due_on < %(today)s), "
            "count(*) FILTER (WHERE status = 'overdue'), count(*) FILTER (WHERE reminder_level > 0) "
            "FROM books_invoice", {"today": TODAY}).fetchone()
    console.print()
    console.print(Text(f"Kontor's dashboard after {NIGHTS} nights", style="bold"))
    console.print(f"  due: {due}, marked overdue: {overdue}, reminded: {reminded}")
    if not any(run.summary() for run in runs) and overdue < due:
        console.print(Text(f"  {due - overdue} invoices were never marked overdue, and no log line above says so.",
                           style="yellow"))
