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
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from budgetlab.errors import BudgetlabError
from budgetlab.harness.rig import Rig
from budgetlab.harness.workers import KILLED, Environment, WorkerTree
from budgetlab.inworker import clock
from budgetlab.stories.lab2 import MODULES, SLUG, Kind, Spec, create_run_jobs, read_ending, run_latency_plan

LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): (\w+)/([\w-]+)\] (.*)$")
TASK_LINE = re.compile(r"(Soft|Hard) time limit \(([\d.]+)s\) exceeded for ([\w.]+)\[")
END_LINE = re.compile(r"Task ([\w.]+)\[[\w-]+\] (raised unexpected: (\w+)|succeeded)")
ITEM = re.compile(r"\b(row|file|step)[- ](\d+)")
# Waiting ends once every killed child is reaped, at the latest at the last hard limit plus this, in wall
# seconds (a loaded machine reaps seconds late), or at WATCH_CAP for tasks without one.
MARGIN, WATCH_CAP = 15.0, 60.0


@dataclass
class Subsystem:
    """One of the three jobs of the scenario, and what the view knows about it."""

    kind: Kind
    job: object = None
    result: object = None
    soft: float | None = None  # production seconds, from the learner's task
    hard: float | None = None
    written: int = 0
    written_at_soft: int | None = None
    child: str = ""  # the pool process that ran it, learned from its log lines

    @property
    def label(self) -> str:
        return self.kind.label

    @property
    def unit(self) -> str:
        return self.kind.unit


def _read_budgets(subsystems: list[Subsystem]) -> None:
    """Read each task's declared limits from the learner's module, the source of truth."""
    for sub in subsystems:
        module = importlib.import_module(f"{SLUG}.{sub.kind.module}")
        task = next((t for t in vars(module).values() if getattr(t, "name", None) == sub.kind.task), None)
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
        self._by_task = {sub.kind.task: sub for sub in subsystems}
        self._by_item = {sub.kind.item: sub for sub in subsystems}
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
        # The worker logs on the lab clock: its timestamps are production time already.
        seconds = (moment - self._started).total_seconds() if self._started else 0.0
        raw = f"[{stamp[11:]}: {process}] {message}"
        if limit := TASK_LINE.search(message):
            self._limit(seconds, limit, raw)
        elif kill := KILLED.search(message):
            sub = next((s for s in self._subsystems if s.child == kill.group(1)), None)
            how = "killed by SIGKILL" if "SIGKILL" in kill.group(3) else f"ended by the SIGTERM ({kill.group(3)})"
            self._add(seconds, sub.label if sub else "worker",
                      f"the worker reaps {kill.group(1)} (pid {kill.group(2)}): {how}", "bold red", raw)
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


def _live(subsystems: list[Subsystem], log: LogView, sent_at: float, last: int | None = 12) -> Group:
    """The live view: the jobs, then the worker log's `last` events (every one in the final frame)."""
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
    for event in sorted(log.events, key=lambda e: e.seconds)[-last if last else 0:]:
        events.add_row(f"{event.seconds:,.0f} s", f"{clock.to_wall(event.seconds):.2f} s", event.who,
                       Text(event.text, style=event.style))
    return Group(head, Text(""), table, Text(""), Text("worker log (production s, wall s)", style="bold"), events,
                 Text(""))


def _refresh(subsystems: list[Subsystem], tree: WorkerTree) -> LogView:
    log = LogView(tree.text(), subsystems)
    for sub in subsystems:
        sub.job.refresh_from_db()
        sub.written = len(sub.kind.written(sub.job))
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
                # The pool logs the child's end a moment after it reports the hard limit.
                if len(tree.killed_children()) >= killed or time.monotonic() > cap:
                    break
            time.sleep(0.1)
        log = _refresh(subsystems, tree)
        # The frame that stays on the screen shows the whole story, however many events it had.
        live.update(_live(subsystems, log, sent_at, last=None))
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
        # Both sides in production time: the workers wrote started_at, and this process reads timezone.now() too.
        oldest_limit = max(sub.hard or 0 for sub in subsystems)
        left = (min(starts) + datetime.timedelta(seconds=oldest_limit) - timezone.now()).total_seconds()
        time.sleep(max(0.0, min(clock.to_wall(left) + 0.05, MARGIN)))
    command = [sys.executable, "-m", f"{SLUG}.rescue"]
    console.print(Text(f"$ python -m {SLUG}.rescue", style="bold"))
    result = subprocess.run(command, env=env.variables(), capture_output=True, text=True, timeout=60)
    output = (result.stdout + result.stderr).strip()
    console.print(Text(output or "(no output)", style="" if result.returncode == 0 else "red"))


def _closing(subsystems: list[Subsystem], tree: WorkerTree, console: Console) -> None:
    problems = [text for sub in subsystems
                if (text := read_ending(Spec(sub.kind, sub.job.items_total), sub.job, sub.result).problem(MARGIN))]
    if not problems and not tree.killed_children():
        console.print(Text("All three jobs ended failed and say how far they got; their tasks ended inside the soft "
                           "window, and no worker child was killed.", style="bold green"))
        return
    for text in problems:
        console.print(Text(text, style="bold red"))
    console.print(f"Change labs/{SLUG}/ and run again; 'budgetlab check 2' grades it, 'budgetlab hint 2' helps.")


def play(target_dir: Path, console: Console) -> int:
    """Run the scenario with the code under target_dir/lab2_batch_jobs; return 0 when it ran."""
    if not (target_dir / SLUG).is_dir():
        raise BudgetlabError(f"{target_dir / SLUG} is missing; restore it with 'budgetlab reset 2'")
    sys.path.insert(0, str(target_dir))
    try:
        with Rig(target_dir, label="lab2run") as rig, rig.django():
            return _play(rig, target_dir, console)
    except KeyboardInterrupt:
        console.print()
        console.print(Text("interrupted: the worker was stopped and the scratch database dropped", style="yellow"))
        return 130
    finally:
        sys.path.remove(str(target_dir))


def _play(rig: Rig, target_dir: Path, console: Console) -> int:
    subsystems = [Subsystem(kind, job) for kind, job in create_run_jobs().items()]
    queue = rig.queue()
    console.print(Text(f"One worker, three children, the code in {target_dir.name}/{SLUG}/; "
                       f"{clock.describe()}.", style="dim"))
    tree = rig.start_worker([queue], MODULES, 3, latency_plan=run_latency_plan())
    _read_budgets(subsystems)
    sent_at = time.monotonic()
    for sub in subsystems:
        sub.result = rig.client.send_task(sub.kind.task, args=[sub.job.pk], queue=queue)
    log = _watch(subsystems, tree, console, sent_at)
    console.print()
    console.print(_product_view(subsystems))
    console.print()
    console.print(Text("The worker's log at the limits", style="bold"))
    for line in log.proof or ["(nothing: no limit was reached)"]:
        console.print(Text(line, style="red" if "exited with" in line or "Hard" in line else ""), soft_wrap=True)
    console.print()
    _rescue(rig.environment(MODULES), subsystems, console)
    console.print()
    _closing(subsystems, tree, console)
    return 0
