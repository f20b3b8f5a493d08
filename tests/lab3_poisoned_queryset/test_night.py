"""Hidden checks of lab 3 on the seeded data: two nights of both sweeps on a real worker.

The bench sends the overdue sweep, then the reminder sweep, then both
again, as Celery beat would on two nights, and records the invoices after
every run. The seeded data has 312 due invoices; two have an address no
mail service accepts (every sweep fails on them) and two are too small to
carry a reminder fee (the reminder sweep fails on them, in PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sweep_bench import OVERDUE, REMINDERS, Bench, DueInvoices, Run, Snapshot


@dataclass
class Nights:
    """Two nights of both sweeps: runs in the order sent, snapshots before the first and after each."""

    due: DueInvoices
    runs: list[Run]
    snapshots: list[Snapshot]

    def first(self, task: str) -> tuple[Run, Snapshot, Snapshot]:
        index = [run.task for run in self.runs].index(task)
        return self.runs[index], self.snapshots[index], self.snapshots[index + 1]

    def second(self, task: str) -> tuple[Run, Snapshot, Snapshot]:
        index = [i for i, run in enumerate(self.runs) if run.task == task][1]
        return self.runs[index], self.snapshots[index], self.snapshots[index + 1]

    def failing(self, task: str) -> list[int]:
        """The invoices this sweep cannot handle, in sweep order."""
        if task == OVERDUE:
            return self.due.bad_email
        return sorted(self.due.bad_email + self.due.fee_over_amount, key=self.due.ids.index)

    def handled(self, task: str) -> list[int]:
        """The invoices this sweep should handle in its first run."""
        scope = self.due.ids if task == OVERDUE else list(self.due.reminder_steps)
        return [pk for pk in scope if pk not in self.failing(task)]


@pytest.fixture(scope="module")
def nights(target_dir, django_ready, tmp_path_factory):
    with Bench(target_dir, tmp_path_factory.mktemp("nights")) as bench:
        snapshots, runs = [bench.snapshot()], []
        for task in (OVERDUE, REMINDERS, OVERDUE, REMINDERS):
            runs.append(bench.run(task))
            snapshots.append(bench.snapshot())
        yield Nights(bench.due, runs, snapshots)


def test_one_overdue_sweep_marks_every_healthy_invoice(nights):
    """After one overdue sweep, every healthy invoice past its due date is overdue, and no poisoned one is."""
    run, _before, after = nights.first(OVERDUE)
    due, healthy = nights.due, nights.handled(OVERDUE)
    left = [pk for pk in healthy if after.status(pk) != "overdue"]
    assert not left, (f"after one overdue sweep, {len(left)} of {len(healthy)} healthy invoices past their due date "
                      f"are still not overdue, the first of them {due.label(left[0])}; {run.ending()}")
    marked = [pk for pk in nights.failing(OVERDUE) if after.status(pk) != "open"]
    assert not marked, (f"the overdue sweep marked {due.labels(marked)} '{after.status(marked[0])}', "
                        "though their notice could not be written to that address")


def test_one_reminder_sweep_reminds_every_healthy_invoice(nights):
    """After one reminder sweep, every healthy invoice has the reminder level and fee it is due for, and no poisoned one."""
    run, _before, after = nights.first(REMINDERS)
    due, healthy = nights.due, nights.handled(REMINDERS)
    left = [pk for pk in healthy if after.reminder(pk) != due.reminder_steps[pk]]
    assert not left, (f"after one reminder sweep, {len(left)} of {len(healthy)} healthy invoices do not have the "
                      f"reminder they are due for, the first of them {due.label(left[0])}; {run.ending()}")
    charged = [pk for pk in nights.failing(REMINDERS) if after.reminder(pk)[0] != 0]
    assert not charged, (f"the reminder sweep left {due.labels(charged)} at reminder level "
                         f"{after.reminder(charged[0])[0]}, though no reminder went out for them")


@pytest.mark.parametrize("task", [OVERDUE, REMINDERS], ids=["overdue", "reminders"])
def test_every_failed_invoice_is_logged_at_error_with_its_id(nights, task):
    """Every invoice a sweep could not handle has an ERROR record that names its id, with the traceback."""
    run, _before, _after = nights.first(task)
    due = nights.due
    errors = [record for record in run.records if record.levelno >= 40]
    for pk in nights.failing(task):
        naming = [record for record in errors if record.names(pk)]
        assert naming, (f"the {run.name} cannot handle invoice {due.label(pk)}, but no ERROR record of its run "
                        f"names id {pk}; {run.ending()}")
        assert any(record.has_traceback for record in naming), (
            f"the {run.name}'s ERROR record for invoice id {pk} has no traceback: '{naming[0].message}'")


@pytest.mark.parametrize("task", [OVERDUE, REMINDERS], ids=["overdue", "reminders"])
def test_a_run_with_failures_says_so_in_one_warning_line(nights, task):
    """A run with failures logs exactly one summary line `processed=N failed=M`, at WARNING, with the true counts."""
    run, _before, _after = nights.first(task)
    processed, failed = len(nights.handled(task)), len(nights.failing(task))
    summaries = run.summaries()
    assert summaries, f"the {run.name} logged no summary line 'processed=N failed=M' for its run; {run.ending()}"
    assert len(summaries) == 1, (f"the {run.name} logged {len(summaries)} summary lines in one run "
                                 f"({summaries[0][0].message!r}, {summaries[1][0].message!r}, ...)")
    record, said_processed, said_failed = summaries[0]
    assert (said_processed, said_failed) == (processed, failed), (
        f"the {run.name}'s summary says processed={said_processed} failed={said_failed}, but {processed} invoices "
        f"were handled and {failed} failed")
    assert record.level == "WARNING", (f"the {run.name}'s summary of a run with {failed} failures is logged at "
                                       f"{record.level}, where an alert on WARNING never sees it: {record.message!r}")


@pytest.mark.parametrize("task", [OVERDUE, REMINDERS], ids=["overdue", "reminders"])
def test_a_second_run_finishes_and_changes_nothing(nights, task):
    """A second run of a sweep on the next night finishes and changes no invoice the first run handled."""
    run, before, after = nights.second(task)
    due = nights.due
    changed = after.changed_since(before)
    assert not changed, (f"a second {run.name} changed {len(changed)} invoices the first run had already "
                         f"handled: {due.labels(changed)}")
    assert run.state == "SUCCESS", (f"the second night's {run.name} did not finish: {run.ending()}, "
                                    "at the first invoice it met, like the night before")
