"""Lab 3 live: Kontor's two invoice sweeps, three nights in a row, on a real worker with the learner's code.

Each night sends the overdue sweep, then the reminder sweep, by name as
Celery beat would, to one worker running labs/lab3_reminder_sweep on a
scratch copy of the seeded data. After every run the scenario reads the
invoices and the worker's log, and it feeds the log records to a small
log-based alert: a logging handler that counts WARNING summaries with
failures, as a log shipper and an alert rule would in production. It
ends with the numbers Kontor's dashboard would show.
"""

from __future__ import annotations

import logging
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab.harness.rig import Rig
from budgetlab.inworker import clock
from budgetlab.paths import logs_dir, repo_root
from budgetlab.stories.lab3 import MODULE, OVERDUE, REMINDERS, SLUG, SUMMARY, TODAY, Run, in_line, snapshot, sweep

NIGHTS = 3
SWEEPS = ((OVERDUE, "overdue"), (REMINDERS, "reminders"))
# The demo pins every model call at 1 production second, so a full night of notices takes seconds, not minutes.
MODEL_SECONDS = 1.0
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
class Night:
    """One sweep on one night, as the scenario shows it."""

    night: int
    label: str
    run: Run
    changed: int
    left: list[str]


def play(target_dir: Path, console: Console) -> int:
    """Run the nights, show each run, the worker's loud log lines, the alert and the dashboard."""
    console.print(f"Kontor's two invoice sweeps, {NIGHTS} nights in a row, as Celery beat sends them: one worker "
                  f"with {target_dir.name}/{SLUG}, a scratch copy of the seeded data.")
    console.print(Text(f"{clock.describe()}; model calls pinned at {MODEL_SECONDS:g} s each", style="dim"))
    logs = logs_dir()
    logs.mkdir(exist_ok=True)
    sys.path.insert(0, str(target_dir))  # the sweeps' own querysets say which invoices are still in line
    try:
        with Rig(target_dir, label="run3") as rig, rig.django():
            queue = rig.queue()
            with console.status("starting a worker with your sweeps …"):
                worker = rig.start_worker([queue], [MODULE], latency_plan={"seed": 7, "model": {"default": MODEL_SECONDS}},
                                          log=logs / "run-3-worker.log")
            nights = _nights(rig.client, worker, queue, console)
            _show_runs(console, nights)
            _show_loud_lines(console, nights)
            _show_alert(console, nights)
            _show_dashboard(console, nights)
            console.print(Text(f"worker log: {_shown(worker.log)}", style="dim"))
    finally:
        sys.path.remove(str(target_dir))
    return 0


def _shown(path: Path) -> str:
    """Return a path relative to the checkout when it lies inside it, so the output reads the same everywhere."""
    try:
        return str(path.relative_to(repo_root()))
    except ValueError:
        return str(path)


def _nights(client, worker, queue: str, console: Console) -> list[Night]:
    nights = []
    for night in range(1, NIGHTS + 1):
        for task, label in SWEEPS:
            before = snapshot()
            with console.status(f"night {night}: {label} …"):
                run = sweep(client, worker, queue, task, timeout=120)
            nights.append(Night(night, label, run, len(snapshot().changed_since(before)), in_line(task)))
    return nights


def _show_runs(console: Console, nights: list[Night]) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("night", "sweep", "result", "changed", "still waiting", "next in line"):
        table.add_column(column, no_wrap=True)
    for night in nights:
        run = night.run
        result = Text("SUCCESS", style="green") if run.state == "SUCCESS" else Text(
            f"{run.state} {run.error}".strip(), style="red")
        table.add_row(str(night.night), night.label, result, str(night.changed), str(len(night.left)),
                      night.left[0] if night.left else "-")
    console.print()
    console.print(table)


def _show_loud_lines(console: Console, nights: list[Night]) -> None:
    """Show what the worker logged at WARNING and above, the same lines folded together with a count."""
    loud = Counter()
    for night in nights:
        for record in night.run.records:
            if record.level in ("WARNING", "ERROR", "CRITICAL"):
                loud[(record.level, TASK_ID.sub("[…]", record.message))] += 1
    console.print()
    console.print(Text("What the worker logged at WARNING and above:", style="bold"))
    if not loud:
        console.print("  nothing")
    for (level, message), count in list(loud.items())[:10]:
        style = "red" if level != "WARNING" else "yellow"
        console.print(Text.assemble("  ", (f"{level:<7}", style), f" {message}", (f"  ×{count}", "dim")))
    if len(loud) > 10:
        console.print(Text(f"  … and {len(loud) - 10} more different lines", style="dim"))


def _show_alert(console: Console, nights: list[Night]) -> None:
    """Ship the worker's records into a logger that carries the alert handler, as a log pipeline would."""
    alert = SummaryAlert()
    shipped = logging.getLogger("budgetlab.lab3.shipped")
    shipped.propagate = False
    shipped.setLevel(logging.DEBUG)
    shipped.addHandler(alert)
    try:
        for night in nights:
            for line in night.run.records:
                record = logging.makeLogRecord({"name": "worker", "levelname": line.level, "msg": line.message,
                                                "levelno": logging.getLevelName(line.level)})
                record.night = night.night
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


def _show_dashboard(console: Console, nights: list[Night]) -> None:
    from kontor.books.models import Invoice

    invoices = Invoice.objects
    due = invoices.exclude(status=Invoice.Status.PAID).filter(due_on__lt=TODAY).count()
    overdue = invoices.filter(status=Invoice.Status.OVERDUE).count()
    reminded = invoices.filter(reminder_level__gt=0).count()
    console.print()
    console.print(Text(f"Kontor's dashboard after {NIGHTS} nights", style="bold"))
    console.print(f"  due: {due}, marked overdue: {overdue}, reminded: {reminded}")
    if not any(night.run.summaries() for night in nights) and overdue < due:
        console.print(Text(f"  {due - overdue} invoices were never marked overdue, and no log line above says so.",
                           style="yellow"))
