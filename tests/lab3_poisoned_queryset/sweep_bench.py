"""What lab 3's checks share: a real worker on a copy of Kontor's data, sweeps sent by name, each run's log records.

A bench is shared by the checks of one module, so that one worker start
and one pair of nightly runs serve several checks; the checks then read
the recorded runs and the invoice snapshots taken after each of them.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.grading import CouldNotGrade, could_not_start
from budgetlab.rig import Rig, WorkerDidNotStart

OVERDUE = "sweeps.invoices_mark_overdue"
REMINDERS = "sweeps.reminders_send"
SWEEP_NAMES = {OVERDUE: "overdue sweep", REMINDERS: "reminder sweep"}
MODULE = "lab3_poisoned_queryset.sweeps"
# Model calls pinned short: these checks are about rows, not latency (312 notices in about a second).
FAST_PLAN = {"seed": 7, "model": {"default": 0.02}}
# What every seeded invoice looks like before a sweep touched it.
SEEDED = {"status": "open", "amount_eur": None, "reminder_level": 0, "reminder_fee": 0}

RECORD_START = re.compile(r"^\[(?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}): (?P<level>[A-Z]+)/(?P<process>[^\]]+)\] "
                          r"(?P<message>.*)$")
SUMMARY = re.compile(r"\bprocessed=(\d+),?\s+failed=(\d+)\b")


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
                found.append((record, int(match[1]), int(match[2])))
        return found


@dataclass
class Snapshot:
    """The invoice columns the sweeps change, by invoice id."""

    rows: dict[int, tuple]

    def status(self, pk: int) -> str:
        return self.rows[pk][0]

    def reminder(self, pk: int) -> tuple:
        return self.rows[pk][2], self.rows[pk][3]

    def changed_since(self, earlier: "Snapshot") -> list[int]:
        return sorted(pk for pk, row in self.rows.items() if earlier.rows.get(pk) != row)


def wait_until(predicate: Callable[[], object], seconds: float) -> object:
    """Poll every 20 ms until predicate returns something true or the wall deadline passes."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.02)


class Bench:
    """A copy of the seeded database, a Redis database, a worker with the target's sweeps and a client.

    The worker's model calls are all short except for one invoice that is
    not due in the seeded data: `slow_id`'s call would take `SLOW_CALL`
    production seconds. Only `make_due` brings it into a sweep.
    """

    SLOW_CALL = 2000

    def __init__(self, target_dir: Path, workdir: Path):
        self.target_dir, self.workdir = target_dir, workdir
        self.rig = Rig(target_dir, label="check")
        self.queue = self.rig.queue()
        self.worker = None
        self.due: DueInvoices | None = None
        self.slow_id: int | None = None
        self._originals: list = []

    def __enter__(self) -> "Bench":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def client(self):
        return self.rig.client

    def start(self) -> None:
        from kontor.books.models import Invoice
        from kontor.datagen import TODAY

        with self.db():
            self.due = due_invoices()
            self._originals = list(Invoice.objects.filter(
                pk__in=[*self.due.bad_email, *Invoice.objects.filter(due_on__gte=TODAY).values_list("pk", flat=True)]))
            if Invoice.objects.exclude(**SEEDED).exists():
                raise CouldNotGrade("the seeded invoices are not all open and unreminded; the checks expect them so")
            self.slow_id = Invoice.objects.filter(due_on__gte=TODAY).order_by("id").values_list("pk", flat=True)[0]
        plan = {**FAST_PLAN, "model": {**FAST_PLAN["model"], "keys": {f"invoice-{self.slow_id}": self.SLOW_CALL}}}
        try:
            self.worker = self.rig.start_worker([self.queue], [MODULE], latency_plan=plan,
                                                log=self.workdir / "worker.log")
        except WorkerDidNotStart as exc:
            raise could_not_start(self.target_dir, exc) from None

    def stop(self) -> None:
        # The runs are recorded: nothing the worker still does matters, so the rig kills it at once.
        self.rig.close()

    def db(self) -> contextlib.AbstractContextManager:
        """Use the bench's database from this process (to prepare data or read results)."""
        return self.rig.django()

    def restore(self) -> None:
        """Put every invoice back as the seed made it, for the next phase of the checks."""
        from kontor.books.models import Invoice

        with self.db():
            Invoice.objects.update(**SEEDED)
            for original in self._originals:
                Invoice.objects.filter(pk=original.pk).exclude(
                    customer_email=original.customer_email, due_on=original.due_on).update(
                    customer_email=original.customer_email, due_on=original.due_on)

    def repair_addresses(self) -> None:
        """Give the invoices with a malformed address a valid one."""
        from kontor.books.models import Invoice

        with self.db():
            for invoice in Invoice.objects.filter(pk__in=self.due.bad_email):
                invoice.customer_email = f"buchhaltung-{invoice.pk}@kunde.example"
                invoice.save(update_fields=["customer_email"])

    def make_due(self, pk: int, position: int) -> list[int]:
        """Give invoice pk the due date of the due invoice at position; return the new sweep order."""
        from kontor.books.models import Invoice
        from kontor.books.selectors import invoices_due
        from kontor.datagen import TODAY

        with self.db():
            Invoice.objects.filter(pk=pk).update(due_on=Invoice.objects.get(pk=self.due.ids[position]).due_on)
            return list(invoices_due(TODAY).values_list("pk", flat=True))

    def snapshot(self) -> Snapshot:
        from kontor.books.models import Invoice

        with self.db():
            return Snapshot({pk: (status, amount_eur, level, fee) for pk, status, amount_eur, level, fee in
                             Invoice.objects.values_list("pk", "status", "amount_eur", "reminder_level",
                                                         "reminder_fee")})

    def run(self, task: str, timeout: float = 30.0, **options) -> Run:
        """Send one sweep by name, as Celery beat would, wait for its end and collect its log records."""
        from celery.exceptions import TimeoutError as ResultTimeout

        result = self.client.send_task(task, queue=self.queue, **options)
        try:
            result.get(timeout=timeout, propagate=False)
        except ResultTimeout:
            return Run(task, result.state, f"no result within {timeout:g} s wall", self.records_of(result.id))
        error = "" if result.state == "SUCCESS" else type(result.result).__name__
        # The worker writes its "succeeded"/"raised" line just after storing the result.
        ended = re.compile(rf"\[{result.id}\] (succeeded|raised)|Hard time limit .* exceeded for \S+\[{result.id}\]")
        wait_until(lambda: ended.search(self.worker.text()), 5.0)
        return Run(task, result.state, error, self.records_of(result.id))

    def records_of(self, task_id: str) -> list[Record]:
        """Return the records from this task's "received" line to its end (one child: nothing interleaves)."""
        records = parse(self.worker.text())
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
    from kontor.datagen import TODAY
    from kontor.seed import POISON
    from lab3_poisoned_queryset.dunning import reminder_step, reminders_due

    invoices = list(invoices_due(TODAY))
    ids = [invoice.pk for invoice in invoices]
    steps = {invoice.pk: tuple(reminder_step(invoice, TODAY)) for invoice in reminders_due(TODAY)}
    return DueInvoices(ids=ids, numbers={invoice.pk: invoice.number for invoice in invoices},
                       bad_email=[ids[p] for p, kind in sorted(POISON.items()) if kind == "bad-email"],
                       fee_over_amount=[ids[p] for p, kind in sorted(POISON.items()) if kind == "fee-over-amount"],
                       reminder_steps=steps)
