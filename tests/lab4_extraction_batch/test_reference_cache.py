"""Hidden checks of lab 4: the category table is read once per process, and stays correct."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import lab4_symptoms as say
import psycopg
import pytest
from lab4_workload import TABLE_READS

from budgetlab import stack
from budgetlab.harness import stuck
from budgetlab.harness.grading import CouldNotGrade, MachineBusy
from budgetlab.harness.rig import Rig
from budgetlab.paths import display_path
from budgetlab.stories.lab4 import SLUG, batch_environment
from budgetlab.stories.reading import wait_until

PROBE = Path(__file__).with_name("lab4_probe.py")
DOCUMENTS, TRANSACTIONS = 60, 120
BATCH = say.batch(DOCUMENTS, TRANSACTIONS)
# The worker's processes: the table may be read once in each.
CONCURRENCY = 2
# Wall seconds the probe may take from its start: it took 0.4-0.7 s quiet, 0.6-1.0 s beside two busy loops.
PROBE_SECONDS = 30.0
CHILD = re.compile(r"/(ForkPoolWorker-\d+)\] Task lab4(?:check)?\.\w+\[[^\]]+\] succeeded")


@pytest.fixture(scope="module", autouse=True)
def probe_process(target_dir):
    """Start the in-process probe (lab4_probe.py) at once, on a database of its own, while a worker starts."""
    stack.require()
    with Rig(target_dir, label="lab4") as rig:
        yield from _probe_process(batch_environment(rig, "lab4-probe"))


def _probe_process(env: dict[str, str]):
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, str(PROBE), str(DOCUMENTS), str(TRANSACTIONS)], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    yield process, started
    if process.poll() is None:
        process.kill()
    process.communicate()


@pytest.fixture(scope="module")
def probe(probe_process, target_dir) -> dict:
    """What one fresh process saw running the target's lookups: import, batch, comparison, mutation, ORM changes."""
    process, started = probe_process
    try:
        stdout, stderr = process.communicate(timeout=max(PROBE_SECONDS - (time.monotonic() - started), 0.1))
    except subprocess.TimeoutExpired:
        seen = stuck.ask(process, started, target_dir / SLUG)
        # Half its time kept from a core: the machine's doing, not the code's.
        if seen.kept > seen.seconds / 2:
            raise MachineBusy(say.probe_kept(BATCH, seen.seconds, seen.kept)) from None
        where = seen.frame and (display_path(seen.frame[0]), *seen.frame[1:])
        raise AssertionError(say.probe_unfinished(BATCH, seen.seconds, seen.cpu, seen.computing, where)) from None
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        # The probe reports every exception the code raises; a process that ended without a report was ended by it.
        last = (stderr.strip().splitlines() or ["no output"])[-1]
        raise AssertionError(say.probe_ended(process.returncode, last))
    report = json.loads(lines[-1])
    if "import_error" in report:
        raise CouldNotGrade(f"importing lab4_extraction_batch.tasks failed: {report['import_error']}")
    return report


def phase(report: dict, name: str) -> dict:
    """Return one phase of the probe's report; a phase that raised fails the check with the learner's error."""
    if "batch_error" in report:
        raise AssertionError(say.batch_raised(BATCH, report["batch_error"]))
    assert f"{name}_error" not in report, say.phase_raised(name, report.get(f"{name}_error"))
    return report[name]


def _scans(sampler: psycopg.Connection) -> int:
    return int(sampler.execute(TABLE_READS).fetchone()[0])


def _backends(sampler: psycopg.Connection) -> set[int]:
    rows = sampler.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                           "AND pid <> pg_backend_pid()").fetchall()
    return {pid for (pid,) in rows}


def _wait_until_gone(sampler: psycopg.Connection, keep: set[int], seconds: float = 10.0) -> None:
    """Wait until every backend the batch opened has exited, which publishes its statistics.

    Celery's Django fixup closes the connection after each task. A backend
    flushes its pending counters on exit, before it leaves pg_stat_activity,
    so once the batch's backends are gone their scans are all counted.
    """
    deadline = time.monotonic() + seconds
    while _backends(sampler) - keep:
        if time.monotonic() > deadline:
            raise CouldNotGrade("the worker's database connections stayed open after the batch ended")
        time.sleep(0.02)


def test_worker_processes_read_category_table_once_each(start_worker, celery_client, queue_name, kontor_db,
                                                       target_dir):
    """On a two-process worker, categorising documents and writing their transactions reads the categories once per process."""
    from kontor.books.models import Category, Currency, Document, Transaction

    path = os.pathsep.join(filter(None, [str(target_dir), str(PROBE.parent), os.environ.get("PYTHONPATH")]))
    worker = start_worker([queue_name], ["lab4_extraction_batch.tasks", "lab4_workload"], concurrency=CONCURRENCY,
                          extra_env={"PYTHONPATH": path})
    documents = list(Document.objects.order_by("pk").values_list("pk", flat=True)[:DOCUMENTS])
    transactions = list(Transaction.objects.order_by("pk").values_list("pk", flat=True)[:TRANSACTIONS])
    # Read before the counters are: the producer names categories by id, as Kontor's web process would.
    category_ids = {code: pk for code, pk in Category.objects.values_list("code", "pk")}
    euro = Currency.objects.get(code="EUR").pk
    with psycopg.connect(kontor_db, autocommit=True) as sampler:
        present, before = _backends(sampler), _scans(sampler)
        # Writes and lookups take turns in every process: categorise six documents, prompt twelve transactions.
        results = []
        for start in range(10):
            results.append(celery_client.send_task(
                "lab4check.categorise_documents", args=[documents[start * 6:start * 6 + 6], category_ids, euro],
                queue=queue_name))
            results.append(celery_client.send_task(
                "lab4.prepare_transactions", args=[transactions[start * 12:start * 12 + 12]], queue=queue_name))
        deadline = time.monotonic() + 60
        unfinished = [result for result in results if not wait_until(result.ready, deadline)]
        assert not unfinished, say.unfinished(len(unfinished), len(results), 60)
        failed = [result for result in results if result.failed()]
        assert not failed, say.failed(len(failed), len(results), repr(failed[0].result))
        values = [result.result for result in results]
        _wait_until_gone(sampler, present)
        scans = _scans(sampler) - before
    per_process: dict[int, int] = {}
    for value in values:
        if isinstance(value, dict):
            per_process[value["pid"]] = per_process.get(value["pid"], 0) + value["category_queries"]
    busy = len(set(CHILD.findall(worker.text())))
    seen = say.worker(len(results), busy, CONCURRENCY)
    assert max(per_process.values(), default=0) <= 1, say.worker_queries(BATCH, seen, per_process)
    assert scans <= (busy or CONCURRENCY), say.worker_reads(BATCH, seen, scans)


def test_importing_reads_no_categories(probe):
    """Importing the task module, as a worker does at start-up, reads nothing from the category table."""
    queries = probe["import_queries"]
    assert queries == 0, say.import_queries(queries)


def test_batch_reads_category_table_once_per_process(probe):
    """A batch of documents and transactions in one process reads the category table at most once."""
    if "batch_error" in probe:
        raise AssertionError(say.batch_raised(BATCH, probe["batch_error"]))
    queries, scans, import_scans = probe["batch_queries"], probe["scans"], probe["import_scans"]
    # From the import on: a process that reads the table while importing and again in the batch reads it twice.
    assert queries <= 1 and import_scans + scans <= 1, say.batch_reads(BATCH, queries, scans, import_scans)


def test_saved_category_shows_in_next_lookup(probe):
    """A category saved through the ORM shows up in the next lookup of the same process."""
    seen = phase(probe, "invalidate")
    before, saved, created = seen["before"], seen["saved"], seen["created"]
    assert saved["category"] == "Miete und Pacht", say.renamed_lookup(before["category"], saved["category"])
    assert saved["table"] == "Miete und Pacht", say.renamed_in_table(before["table"], saved["table"])
    assert saved["match"] == "4210", say.new_keyword_match(saved["match"])
    assert created["listed"] and created["match"] == "4215", say.created(created["listed"], created["match"])


def test_deleted_category_disappears_from_next_lookup(probe):
    """A category deleted through the ORM is gone from the next lookup of the same process."""
    seen = phase(probe, "invalidate")
    deleted = seen["deleted"]
    assert not deleted["listed"], say.deleted_listed(seen["before"]["listed_4250"])
    assert deleted["match"] != "4250", say.deleted_match(deleted["match"])


def test_callers_cannot_change_what_the_next_caller_gets(probe):
    """A caller that changes the rows a lookup returned does not change what the next caller gets."""
    mutated = phase(probe, "mutate")
    assert not mutated["changed"], say.mutated(mutated["attempted"], mutated["changed"])


def test_outputs_match_uncached_lookups(probe):
    """Every extraction and prompt of the batch is identical to what the uncached lookups give."""
    compared = phase(probe, "compare")
    assert compared["different"] == 0, say.compared(compared["different"], compared["items"], compared["first"])
