"""Hidden checks of lab 3 on data whose only bad rows are the ones PostgreSQL refuses.

The bench repairs the two malformed addresses first. The overdue sweep
then has nothing to fail on, and the reminder sweep fails only on the
two invoices too small to carry a reminder fee, inside its transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sweep_bench import OVERDUE, REMINDERS, Bench, DueInvoices, Run, Snapshot


@dataclass
class Repaired:
    due: DueInvoices
    overdue: Run
    reminders: Run
    after: Snapshot


@pytest.fixture(scope="module")
def repaired(target_dir, django_ready, tmp_path_factory):
    from kontor.books.models import Invoice

    with Bench(target_dir, tmp_path_factory.mktemp("repaired")) as bench:
        with bench.db():
            for invoice in Invoice.objects.filter(pk__in=bench.due.bad_email):
                invoice.customer_email = f"buchhaltung-{invoice.pk}@kunde.example"
                invoice.save(update_fields=["customer_email"])
        overdue = bench.run(OVERDUE)
        reminders = bench.run(REMINDERS)
        yield Repaired(bench.due, overdue, reminders, bench.snapshot())


def test_a_run_without_failures_logs_no_warning(repaired):
    """A run in which no invoice fails logs nothing at WARNING or above, and no more than one summary."""
    run, total = repaired.overdue, len(repaired.due.ids)
    assert run.state == "SUCCESS", f"the overdue sweep did not finish on data without a bad invoice: {run.ending()}"
    loud = [record for record in run.records if record.levelno >= 30]
    assert not loud, (f"the overdue sweep handled all {total} invoices without a failure, yet logged at "
                      f"{loud[0].level}: {loud[0].message!r}; an alert on WARNING would fire every night")
    summaries = run.summaries()
    assert len(summaries) <= 1, f"the overdue sweep logged {len(summaries)} summary lines in one run"
    if summaries:
        _record, processed, failed = summaries[0]
        assert (processed, failed) == (total, 0), (f"the overdue sweep's summary says processed={processed} "
                                                   f"failed={failed}, but all {total} invoices were handled")


def test_a_fee_the_database_refuses_spoils_no_other_invoice(repaired):
    """Inside the reminder sweep's transaction, a fee PostgreSQL refuses fails that invoice alone."""
    run, due, after = repaired.reminders, repaired.due, repaired.after
    refused = due.fee_over_amount
    first = refused[0]
    scope = list(due.reminder_steps)
    healthy = [pk for pk in scope if pk not in refused]
    missing = [pk for pk in healthy if after.reminder(pk) != due.reminder_steps[pk]]
    later = [pk for pk in missing if scope.index(pk) > scope.index(first)]
    earlier = [pk for pk in missing if scope.index(pk) < scope.index(first)]
    assert not missing, (
        f"after PostgreSQL refused the fee of {due.label(first)} inside the reminder sweep's transaction, "
        f"{len(later)} of {sum(scope.index(pk) > scope.index(first) for pk in healthy)} healthy invoices after it "
        f"and {len(earlier)} of {sum(scope.index(pk) < scope.index(first) for pk in healthy)} before it "
        f"have no reminder; {run.ending()}")
    summaries = run.summaries()
    if len(summaries) == 1:
        _record, processed, failed = summaries[0]
        assert (processed, failed) == (len(healthy), len(refused)), (
            f"the reminder sweep's summary says processed={processed} failed={failed}, but {len(healthy)} "
            f"invoices got their reminder and {len(refused)} fees were refused")
