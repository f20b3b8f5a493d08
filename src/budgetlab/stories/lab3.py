"""Lab 3's story, shared by `budgetlab run 3` and its checks: the two sweeps, their poisoned rows, how a run ended.

Kontor's nightly sweeps are sent by name, as Celery beat sends them, to a
worker running the target's sweeps.py. A run is read from the worker's
own log (its records from "received" to the line that ends it) and from
the invoices before and after. The poisoned rows are the seeded due
invoices that no sweep can handle: two addresses no mail service takes,
two invoices too small to carry a reminder fee.
"""

from __future__ import annotations

import importlib
import logging
import re
import time
from dataclasses import dataclass, field

from budgetlab import labs
from budgetlab.inworker import clock
from budgetlab.stories.reading import settled, wait_until
from kontor.datagen import TODAY

SLUG = labs.slug_of(3)
MODULE = f"{SLUG}.sweeps"
OVERDUE = "sweeps.invoices_mark_overdue"
REMINDERS = "sweeps.reminders_send"
SWEEP_NAMES = {OVERDUE: "overdue sweep", REMINDERS: "reminder sweep"}
# What every seeded invoice looks like before a sweep touched it.
SEEDED = {"status": "open", "amount_eur": None, "reminder_level": 0, "reminder_fee": 0}

RECORD_START = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): (?P<level>[A-Z]+)/(?P<process>[^\]]+)\] "
                          r"(?P<message>.*)$")
# The summary line a sweep with failures must log: `processed=571 failed=20`, a metric one can alert on.
SUMMARY = re.compile(r"\bprocessed=(?P<processed>\d+),?\s+failed=(?P<failed>\d+)\b")

# The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on: the one in force.
worker_clock = clock.factor


@dataclass
class Record:
    """One log record of the worker, as its log file shows it."""

    level: str
    process: str
    message: str
    lines: list[str] = field(default_factory=list)

    @property
    def levelno(self) -> int:
        number = logging.getLevelName(self.level)
        return number if isinstance(number, int) else logging.INFO

    @property
    def has_traceback(self) -> bool:
        return any(line.startswith("Traceback (most recent call last)") for line in self.lines)

    def names(self, number: int) -> bool:
        """Whether the first line of the message mentions this number as a number of its own."""
        return re.search(rf"(?<![\w.]){number}(?![\w.])", self.message) is not None


def parse(text: str) -> list[Record]:
    """Split a worker log into records; lines without the record prefix belong to the record above."""
    records: list[Record] = []
    for line in text.splitlines():
        match = RECORD_START.match(line)
        if match:
            records.append(Record(match["level"], match["process"], match["message"]))
        elif records:
            records[-1].lines.append(line)
    return records


def records_of(text: str, task_id: str) -> list[Record]:
    """Return the records from this task's "received" line to its end (one child: nothing interleaves)."""
    records = parse(text)
    start = next((i for i, r in enumerate(records) if f"[{task_id}] received" in r.message), None)
    if start is None:
        return []
    for end in range(start + 1, len(records)):
        if _ends(records[end], task_id):
            return records[start:end + 1]
    return records[start:]


def _ends(record: Record, task_id: str) -> bool:
    """Whether a record is the last one a task's run writes: its outcome, or the hard limit's kill."""
    return any(f"[{task_id}]{tail}" in record.message for tail in (" succeeded", " raised")) or (
        record.message.startswith("Hard time limit") and record.message.endswith(f"[{task_id}]"))


@dataclass
class Run:
    """One sweep sent by name and what came of it."""

    task: str
    state: str
    error: str
    records: list[Record]

    @property
    def name(self) -> str:
        return SWEEP_NAMES.get(self.task, self.task)

    def ending(self) -> str:
        """Say how the run ended, in a few words for a check's message."""
        if self.state == "SUCCESS":
            return "the run succeeded"
        return f"the run ended {self.state} with {self.error}" if self.error else f"the run ended {self.state}"

    def summaries(self) -> list[tuple[Record, int, int]]:
        """Return every record of this run that carries `processed=N failed=M`, with N and M."""
        found = []
        for record in self.records:
            match = SUMMARY.search(record.message)
            if match:
                found.append((record, int(match["processed"]), int(match["failed"])))
        return found


def sweep(client, worker, queue: str, task: str, timeout: float = 30.0, **options) -> Run:
    """Send one sweep by name, as Celery beat would, wait for its end and collect its log records."""
    result = client.send_task(task, queue=queue, **options)
    if not settled(result, timeout):
        return Run(task, result.state, f"no result within {timeout:g} s wall", records_of(worker.text(), result.id))
    error = "" if result.state == "SUCCESS" else type(result.result).__name__
    # The worker writes its "succeeded"/"raised" line just after storing the result.
    ended = re.compile(rf"\[{result.id}\] (succeeded|raised)|Hard time limit .* exceeded for \S+\[{result.id}\]")
    wait_until(lambda: ended.search(worker.text()), time.monotonic() + 5.0)
    return Run(task, result.state, error, records_of(worker.text(), result.id))


@dataclass
class Snapshot:
    """The invoice columns the sweeps change (status, amount in euros, reminder level and fee), by invoice id."""

    rows: dict[int, tuple]

    def status(self, pk: int) -> str:
        return self.rows[pk][0]

    def reminder(self, pk: int) -> tuple:
        return self.rows[pk][2], self.rows[pk][3]

    def changed_since(self, earlier: Snapshot) -> list[int]:
        return sorted(pk for pk, row in self.rows.items() if earlier.rows.get(pk) != row)


def snapshot() -> Snapshot:
    """Read the invoices of the database Django points at."""
    from kontor.books.models import Invoice

    return Snapshot({pk: (status, amount_eur, level, fee) for pk, status, amount_eur, level, fee in
                     Invoice.objects.values_list("pk", "status", "amount_eur", "reminder_level", "reminder_fee")})


def in_line(task: str) -> list[str]:
    """Return, in sweep order, the invoice numbers the next run of this sweep will meet (the target's querysets)."""
    from kontor.books.selectors import invoices_due
    reminders_due = importlib.import_module(f"{SLUG}.dunning").reminders_due

    queryset = invoices_due(TODAY) if task == OVERDUE else reminders_due(TODAY)
    return list(queryset.values_list("number", flat=True))


@dataclass
class DueInvoices:
    """The seeded due invoices in sweep order, and which of them are poisoned and how."""

    ids: list[int]
    numbers: dict[int, str]
    bad_email: list[int]
    fee_over_amount: list[int]
    reminder_steps: dict[int, tuple]

    def label(self, pk: int) -> str:
        return f"{self.numbers[pk]} (id {pk})" if pk in self.numbers else f"invoice id {pk}"

    def labels(self, pks: list[int], most: int = 4) -> str:
        shown = ", ".join(self.label(pk) for pk in pks[:most])
        return shown + (f" and {len(pks) - most} more" if len(pks) > most else "")


def due_invoices() -> DueInvoices:
    """Read the due invoices of the database Django points at, before any sweep ran."""
    from kontor.books.selectors import invoices_due
    from kontor.seed import POISON
    dunning = importlib.import_module(f"{SLUG}.dunning")
    reminder_step, reminders_due = dunning.reminder_step, dunning.reminders_due

    invoices = list(invoices_due(TODAY))
    ids = [invoice.pk for invoice in invoices]
    steps = {invoice.pk: tuple(reminder_step(invoice, TODAY)) for invoice in reminders_due(TODAY)}
    return DueInvoices(ids=ids, numbers={invoice.pk: invoice.number for invoice in invoices},
                       bad_email=[ids[p] for p, kind in sorted(POISON.items()) if kind == "bad-email"],
                       fee_over_amount=[ids[p] for p, kind in sorted(POISON.items()) if kind == "fee-over-amount"],
                       reminder_steps=steps)
