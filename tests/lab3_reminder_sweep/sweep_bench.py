"""What lab 3's checks share: a real worker on a copy of Kontor's data, the story's sweeps sent to it, each run recorded.

A bench is shared by the checks of one module, so that one worker start
and one pair of nightly runs serve several checks; the checks then read
the recorded runs and the invoice snapshots taken after each of them.
What a run, a record and a poisoned invoice are is lab 3's story
(budgetlab.stories.lab3); the bench only stages the phases.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from budgetlab.harness import stalls
from budgetlab.harness.grading import CouldNotGrade, could_not_start
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.stories.lab3 import (MODULE, OVERDUE, REMINDERS, SEEDED, DueInvoices, Run, Snapshot, due_invoices,
                                    snapshot, sweep)

__all__ = ["OVERDUE", "REMINDERS", "Bench", "DueInvoices", "Run", "Snapshot"]
# Model calls pinned short: these checks are about rows, not latency (312 notices in about a second).
FAST_PLAN = {"seed": 7, "model": {"default": 0.02}}


class Bench:
    """A copy of the seeded database, a Redis database, a worker with the target's sweeps and a client.

    The worker's model calls are all short except for one invoice that is
    not due in the seeded data: `slow_id`'s call would take `SLOW_CALL`
    production seconds, and the database holds the write of its reminder
    (`held_reminder`, a stall) until the writer gives its connection up.
    Only `make_due` brings it into a sweep.
    """

    SLOW_CALL = 2000

    def __init__(self, target_dir: Path, workdir: Path):
        self.target_dir, self.workdir = target_dir, workdir
        self.rig = Rig(target_dir, label="check")
        self.queue = self.rig.queue()
        self.worker = None
        self.due: DueInvoices | None = None
        self.slow_id: int | None = None
        self.held_reminder: stalls.Stall | None = None
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
            # Before the worker connects: the stall's client check applies to new connections.
            self.held_reminder = stalls.Stall("reminder", Invoice._meta.db_table, "UPDATE",
                                              f"NEW.id = {self.slow_id} AND NEW.reminder_level <> OLD.reminder_level")
            stalls.install([self.held_reminder])
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

    def reminder_order(self) -> list[int]:
        """Return the invoices the next reminder sweep will meet, in its order (the target's queryset)."""
        from kontor.datagen import TODAY
        from lab3_reminder_sweep.dunning import reminders_due

        with self.db():
            return list(reminders_due(TODAY).values_list("pk", flat=True))

    def reminder_held(self) -> bool:
        """Tell whether a sweep reached the held reminder write; end that write if its writer still waits."""
        with self.db():
            stalls.release()
            return stalls.fired(self.held_reminder)

    def snapshot(self) -> Snapshot:
        with self.db():
            return snapshot()

    def run(self, task: str, timeout: float = 30.0, **options) -> Run:
        """Send one sweep by name, as Celery beat would, wait for its end and collect its log records."""
        return sweep(self.client, self.worker, self.queue, task, timeout, **options)
