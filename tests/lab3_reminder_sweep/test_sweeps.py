"""Hidden checks of lab 3's sweeps, on one real worker and a copy of Kontor's data.

The seeded data has 312 due invoices. Two have an address no mail service
accepts (both sweeps fail on them, in Python) and two are too small to
carry a reminder fee (the reminder sweep fails on them, in PostgreSQL,
inside its transaction). The bench plays three phases, restoring the
invoices between them, and the checks read what each phase recorded:

1. two nights on the seeded data: the overdue sweep, the reminder sweep,
   then both again;
2. one night after the two addresses were repaired: nothing fails in the
   overdue sweep, only the refused fees fail in the reminder sweep;
3. one overdue sweep sent with a 100 s soft limit, in which the model call
   for one invoice, at position 13, would take 2000 s;
4. one reminder sweep sent with the same limits, in which the database
   holds the write of that invoice's reminder until the soft limit lands
   inside it, in the middle of the sweep's transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from sweep_bench import OVERDUE, REMINDERS, Bench, DueInvoices, Run, Snapshot

SLOW_POSITION = 12  # the slow invoice takes the due date of this position and sorts right after it
SOFT, HARD = 100, 400  # production seconds; on the lab clock, 0.5 s and 2 s of wall time


@dataclass
class Phases:
    """What the bench recorded: runs in the order sent, with the invoices before and after each."""

    due: DueInvoices
    nights: list[Run]
    night_snapshots: list[Snapshot]
    repaired_overdue: Run
    repaired_reminders: Run
    repaired_after: Snapshot
    slow_id: int
    slow_order: list[int]
    limited: Run
    limited_ended: Snapshot
    limited_later: Snapshot
    held_order: list[int]
    held: Run
    held_reached: bool
    held_ended: Snapshot
    held_later: Snapshot

    def first(self, task: str) -> tuple[Run, Snapshot]:
        index = [run.task for run in self.nights].index(task)
        return self.nights[index], self.night_snapshots[index + 1]

    def second(self, task: str) -> tuple[Run, Snapshot, Snapshot]:
        index = [i for i, run in enumerate(self.nights) if run.task == task][1]
        return self.nights[index], self.night_snapshots[index], self.night_snapshots[index + 1]

    def failing(self, task: str) -> list[int]:
        """The invoices a sweep cannot handle in the seeded data, in sweep order."""
        if task == OVERDUE:
            return self.due.bad_email
        return sorted(self.due.bad_email + self.due.fee_over_amount, key=self.due.ids.index)

    def handled(self, task: str) -> list[int]:
        """The invoices a sweep should handle in its first run on the seeded data."""
        scope = self.due.ids if task == OVERDUE else list(self.due.reminder_steps)
        return [pk for pk in scope if pk not in self.failing(task)]


@pytest.fixture(scope="module")
def phases(target_dir, stack_ready, tmp_path_factory):
    with Bench(target_dir, tmp_path_factory.mktemp("sweeps")) as bench:
        snapshots, nights = [bench.snapshot()], []
        for task in (OVERDUE, REMINDERS, OVERDUE, REMINDERS):
            nights.append(bench.run(task))
            snapshots.append(bench.snapshot())

        bench.restore()
        bench.repair_addresses()
        repaired_overdue, repaired_reminders = bench.run(OVERDUE), bench.run(REMINDERS)
        repaired_after = bench.snapshot()

        bench.restore()
        slow_order = bench.make_due(bench.slow_id, SLOW_POSITION)
        limited = bench.run(OVERDUE, soft_time_limit=SOFT, time_limit=HARD)
        limited_ended = bench.snapshot()
        time.sleep(0.3)  # the task has ended: give anything still running a chance to show itself
        limited_later = bench.snapshot()

        bench.restore()
        bench.make_due(bench.slow_id, SLOW_POSITION)
        held_order = bench.reminder_order()
        held = bench.run(REMINDERS, soft_time_limit=SOFT, time_limit=HARD)
        held_reached, held_ended = bench.reminder_held(), bench.snapshot()
        time.sleep(0.3)  # as above
        yield Phases(bench.due, nights, snapshots, repaired_overdue, repaired_reminders, repaired_after,
                     bench.slow_id, slow_order, limited, limited_ended, limited_later,
                     held_order, held, held_reached, held_ended, bench.snapshot())


def test_one_overdue_sweep_marks_every_healthy_invoice(phases):
    """After one overdue sweep, every healthy invoice past its due date is overdue, and no poisoned one is."""
    run, after = phases.first(OVERDUE)
    due, healthy = phases.due, phases.handled(OVERDUE)
    left = [pk for pk in healthy if after.status(pk) != "overdue"]
    assert not left, (f"after one overdue sweep, {len(left)} of {len(healthy)} healthy invoices past their due date "
                      f"are still not overdue, the first of them {due.label(left[0])}; {run.ending()}")
    marked = [pk for pk in phases.failing(OVERDUE) if after.status(pk) != "open"]
    assert not marked, (f"the overdue sweep marked {due.labels(marked)} '{after.status(marked[0])}', "
                        "though no notice could be written to that address")


def test_one_reminder_sweep_reminds_every_healthy_invoice(phases):
    """After one reminder sweep, every healthy invoice has the reminder it is due for, and no poisoned one has."""
    run, after = phases.first(REMINDERS)
    due, healthy = phases.due, phases.handled(REMINDERS)
    left = [pk for pk in healthy if after.reminder(pk) != due.reminder_steps[pk]]
    assert not left, (f"after one reminder sweep, {len(left)} of {len(healthy)} healthy invoices do not have the "
                      f"reminder they are due for, the first of them {due.label(left[0])}; {run.ending()}")
    charged = [pk for pk in phases.failing(REMINDERS) if after.reminder(pk)[0] != 0]
    assert not charged, (f"the reminder sweep left {due.labels(charged)} at reminder level "
                         f"{after.reminder(charged[0])[0]}, though no reminder went out for them")


def _assert_failures_logged(phases: Phases, task: str) -> None:
    run, _after = phases.first(task)
    due = phases.due
    errors = [record for record in run.records if record.levelno >= 40]
    for pk in phases.failing(task):
        naming = [record for record in errors if record.names(pk)]
        assert naming, (f"the {run.name} cannot handle invoice {due.label(pk)}, but no ERROR record of its run "
                        f"names id {pk}; {run.ending()}")
        assert any(record.has_traceback for record in naming), (
            f"the {run.name}'s ERROR record for invoice id {pk} has no traceback: {naming[0].message!r}")


def test_the_overdue_sweep_logs_each_failed_invoice_at_error(phases):
    """Every invoice the overdue sweep could not handle has an ERROR record naming its id, with the traceback."""
    _assert_failures_logged(phases, OVERDUE)


def test_the_reminder_sweep_logs_each_failed_invoice_at_error(phases):
    """Every invoice the reminder sweep could not handle has an ERROR record naming its id, with the traceback."""
    _assert_failures_logged(phases, REMINDERS)


def _assert_one_warning_summary(phases: Phases, task: str) -> None:
    run, _after = phases.first(task)
    processed, failed = len(phases.handled(task)), len(phases.failing(task))
    summaries = run.summaries()
    assert summaries, f"the {run.name} logged no summary line 'processed=N failed=M' for its run; {run.ending()}"
    assert len(summaries) == 1, (f"the {run.name} logged {len(summaries)} summary lines in one run: "
                                 f"{summaries[0][0].message!r}, {summaries[1][0].message!r}")
    record, said_processed, said_failed = summaries[0]
    assert (said_processed, said_failed) == (processed, failed), (
        f"the {run.name}'s summary says processed={said_processed} failed={said_failed}, but {processed} invoices "
        f"were handled and {failed} failed")
    assert record.level == "WARNING", (f"the {run.name}'s summary of a run with {failed} failures is logged at "
                                       f"{record.level}, where an alert on WARNING never sees it: {record.message!r}")


def test_an_overdue_sweep_with_failures_says_so_in_one_warning_line(phases):
    """An overdue sweep with failures logs one summary line `processed=N failed=M`, at WARNING, with true counts."""
    _assert_one_warning_summary(phases, OVERDUE)


def test_a_reminder_sweep_with_failures_says_so_in_one_warning_line(phases):
    """A reminder sweep with failures logs one summary line `processed=N failed=M`, at WARNING, with true counts."""
    _assert_one_warning_summary(phases, REMINDERS)


def test_a_run_without_failures_logs_no_warning(phases):
    """A run in which no invoice fails logs nothing at WARNING or above, and at most one summary."""
    run, total = phases.repaired_overdue, len(phases.due.ids)
    assert run.state == "SUCCESS", f"the overdue sweep did not finish on data without a bad address: {run.ending()}"
    loud = [record for record in run.records if record.levelno >= 30]
    assert not loud, (f"the overdue sweep handled all {total} invoices without a failure, yet logged at "
                      f"{loud[0].level}: {loud[0].message!r}; an alert on WARNING would fire every night")
    summaries = run.summaries()
    assert len(summaries) <= 1, f"the overdue sweep logged {len(summaries)} summary lines in one run"
    if summaries:
        _record, processed, failed = summaries[0]
        assert (processed, failed) == (total, 0), (f"the overdue sweep's summary says processed={processed} "
                                                   f"failed={failed}, but all {total} invoices were handled")


def test_a_fee_the_database_refuses_spoils_no_other_invoice(phases):
    """Inside the reminder sweep's transaction, a fee PostgreSQL refuses fails that invoice alone."""
    run, due, after = phases.repaired_reminders, phases.due, phases.repaired_after
    refused, scope = due.fee_over_amount, list(due.reminder_steps)
    cut = scope.index(refused[0])
    healthy = [pk for pk in scope if pk not in refused]
    missing = [pk for pk in healthy if after.reminder(pk) != due.reminder_steps[pk]]
    later = sum(scope.index(pk) > cut for pk in missing)
    assert not missing, (
        f"after PostgreSQL refused the fee of {due.label(refused[0])} inside the reminder sweep's transaction, "
        f"{later} of {sum(scope.index(pk) > cut for pk in healthy)} healthy invoices after it and "
        f"{len(missing) - later} of {sum(scope.index(pk) < cut for pk in healthy)} before it have no reminder; "
        f"{run.ending()}")
    assert run.state == "SUCCESS", f"the reminder sweep with two refused fees did not finish: {run.ending()}"


def test_a_soft_limit_in_the_middle_of_a_sweep_ends_it(phases):
    """A soft limit that fires mid-sweep ends the task with SoftTimeLimitExceeded; no invoice after it is touched."""
    run, due, slow = phases.limited, phases.due, phases.slow_id
    slow_label = f"invoice id {slow}"
    fired = any("Soft time limit" in record.message for record in run.records)
    assert fired or run.state == "SUCCESS", (
        f"the overdue sweep ended before it reached {slow_label}, whose model call outlasts its {SOFT} s soft "
        f"limit: {run.ending()}")
    assert run.state == "FAILURE" and run.error == "SoftTimeLimitExceeded", (
        f"the soft limit ({SOFT} s) fired while the model drafted the notice for {slow_label}, yet "
        f"{run.ending()} instead of FAILURE with SoftTimeLimitExceeded")
    after_slow = phases.slow_order[phases.slow_order.index(slow):]
    touched = [pk for pk in after_slow if phases.limited_later.status(pk) != "open"]
    assert not touched, (f"after its soft limit fired during the model call for {slow_label}, the overdue sweep went "
                         f"on and marked {len(touched)} more invoices overdue, from {due.label(touched[0])} on")
    moved = phases.limited_later.changed_since(phases.limited_ended)
    assert not moved, f"{len(moved)} invoices still changed after the overdue sweep had ended: {due.labels(moved)}"


def test_a_soft_limit_inside_a_database_write_ends_the_sweep(phases):
    """A soft limit that lands while the database holds a reminder's write ends the reminder sweep with SoftTimeLimitExceeded."""
    run, due, slow = phases.held, phases.due, phases.slow_id
    slow_label = f"invoice id {slow}"
    assert slow in phases.held_order, f"{slow_label} was not due for a reminder; the checks expect the seeded data"
    assert phases.held_reached, (
        f"the reminder sweep ended before it wrote the reminder of {slow_label}, whose write the database held "
        f"past the sweep's {SOFT} s soft limit: {run.ending()}")
    assert run.state == "FAILURE" and run.error == "SoftTimeLimitExceeded", (
        f"the soft limit ({SOFT} s) fired while the database was writing the reminder of {slow_label}, yet "
        f"{run.ending()} instead of FAILURE with SoftTimeLimitExceeded")
    after_slow = phases.held_order[phases.held_order.index(slow) + 1:]
    # By the time the task ended; a change only after that is the next assertion's.
    touched = [pk for pk in after_slow if phases.held_ended.reminder(pk) != (0, 0)]
    assert not touched, (f"after its soft limit fired during the write for {slow_label}, the reminder sweep went on "
                         f"and reminded {len(touched)} more invoices, from {due.label(touched[0])} on")
    moved = phases.held_later.changed_since(phases.held_ended)
    assert not moved, f"{len(moved)} invoices still changed after the reminder sweep had ended: {due.labels(moved)}"


def _assert_second_run_idle(phases: Phases, task: str) -> None:
    run, before, after = phases.second(task)
    changed = after.changed_since(before)
    assert not changed, (f"a second {run.name} changed {len(changed)} invoices the first run had already "
                         f"handled: {phases.due.labels(changed)}")
    assert run.state == "SUCCESS", f"the second night's {run.name} did not finish: {run.ending()}"


def test_a_second_overdue_sweep_finishes_and_changes_nothing(phases):
    """The next night's overdue sweep finishes and changes no invoice the first run handled."""
    _assert_second_run_idle(phases, OVERDUE)


def test_a_second_reminder_sweep_finishes_and_changes_nothing(phases):
    """The next night's reminder sweep finishes and changes no invoice the first run handled."""
    _assert_second_run_idle(phases, REMINDERS)
