"""Lab 4's live scenario: one realistic batch through the category lookups, with the table's scans counted.

`budgetlab run 4` copies the seeded database, runs 500 documents and 2,000
transactions through the extractor and both prompt builders in one fresh
batch process with the learner's code, and reads the category table's scan
counters from PostgreSQL before and after. The counters are sampled in
autocommit on a connection of their own, and the batch's connection forces
its statistics out before it reports, so the figures are exact (lab 5 is
about why both matter). benchmarks/lab4_cache.py runs the same batch for
two trees and compares them.

Run as `python -m budgetlab.scenarios.lab4 DOCUMENTS TRANSACTIONS`, this
module is the batch process itself (PYTHONPATH naming the tree to run,
KONTOR_DATABASE_URL its database); it prints JSON lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text

from budgetlab.stories.lab4 import LOOKUPS, SLUG, TABLE, batch_environment

DOCUMENTS, TRANSACTIONS = 500, 2000


@dataclass(frozen=True)
class BatchFigures:
    """What one batch process did, and what PostgreSQL counted on the category table meanwhile."""

    rows: int
    wall_seconds: float
    lookup_seconds: float
    lookup_calls: int
    queries: int
    category_queries: int
    import_queries: int
    scans: int
    rows_read: int

    @property
    def scans_per_row(self) -> float:
        return self.scans / self.rows

    @property
    def queries_per_row(self) -> float:
        return self.queries / self.rows

    @property
    def ms_per_lookup(self) -> float:
        return self.lookup_seconds / max(self.lookup_calls, 1) * 1000


class BatchFailed(Exception):
    """The batch process stopped before it finished (the learner's code raised, or did not import)."""


def _table_counters(sampler) -> tuple[int, int]:
    """Return (scans, rows read) of the category table: sequential plus index scans, read in autocommit."""
    row = sampler.execute("SELECT seq_scan + coalesce(idx_scan, 0), seq_tup_read + coalesce(idx_tup_fetch, 0) "
                          "FROM pg_stat_user_tables WHERE relname = %s", [TABLE]).fetchone()
    return int(row[0]), int(row[1])


def run_batch(rig, documents: int = DOCUMENTS, transactions: int = TRANSACTIONS,
              on_progress=lambda done, scans: None) -> BatchFigures:
    """Run one batch process with the tree's lab 4 code and return its figures.

    on_progress(done, scans) is called about five times a second while the
    batch runs; the live scan count lags by up to a second, because a busy
    backend publishes its counters at most once a second.
    """
    import psycopg

    env = batch_environment(rig, "lab4-batch")
    with psycopg.connect(rig.database_url, autocommit=True) as sampler:
        scans_before, read_before = _table_counters(sampler)
        proc = subprocess.Popen([sys.executable, "-m", __name__, str(documents), str(transactions)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
        lines: list[dict] = []
        other: deque[str] = deque(maxlen=20)
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines, other), daemon=True)
        reader.start()
        try:
            while reader.is_alive():
                done = next((line["done"] for line in reversed(lines) if "done" in line), 0)
                on_progress(done, _table_counters(sampler)[0] - scans_before)
                reader.join(0.2)
            proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        scans_after, read_after = _table_counters(sampler)
    result = next((line for line in reversed(lines) if "result" in line or "error" in line), None)
    if result is None or "error" in result:
        last = result["error"] if result else (other[-1] if other else "it printed nothing")
        raise BatchFailed(last)
    figures = result["result"]
    on_progress(figures["rows"], scans_after - scans_before)
    return BatchFigures(**figures, scans=scans_after - scans_before, rows_read=read_after - read_before)


def _read_lines(stream, into: list[dict], other: deque) -> None:
    """Collect the batch process's JSON lines; keep its last other lines (a traceback) for the error message."""
    for line in stream:
        text = line.strip()
        if not text:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            into.append(value)
        else:
            other.append(text)
    stream.close()


def play(target_dir: Path, console) -> int:
    """Play the scenario with the tree's code: one batch, its scans, its time, its cost per row."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from budgetlab.harness.rig import Rig
    from budgetlab.inworker import clock

    console.print(f"{DOCUMENTS} documents (OCR, keyword match, prompt) and {TRANSACTIONS:,} transactions (prompt), "
                  f"in one batch process with the code in {target_dir.name}/{SLUG}/, on a fresh copy of the seeded database.")
    console.print(Text(clock.describe(), style="dim"))
    with Rig(target_dir, label="run4") as rig:
        with Progress(TextColumn("  batch"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("[cyan]category-table scans: {task.fields[scans]:,}"),
                      console=console, transient=False) as progress:
            bar = progress.add_task("batch", total=DOCUMENTS + TRANSACTIONS, scans=0)
            try:
                figures = run_batch(rig, on_progress=lambda done, scans: progress.update(bar, completed=done,
                                                                                          scans=scans))
            except BatchFailed as exc:
                console.print(f"[red]the batch stopped:[/] {exc}")
                return 1
    _show(figures, console)
    return 0


def _show(f: BatchFigures, console) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("batch", f"{f.rows:,} rows in {f.wall_seconds:.2f} s wall")
    table.add_row("category table", f"{f.scans:,} {'scan' if f.scans == 1 else 'scans'}, {f.rows_read:,} rows read "
                  "[dim](pg_stat, autocommit)[/]")
    table.add_row("queries", f"{f.queries:,}, {f.category_queries:,} of them on the category table")
    table.add_row("lookups", f"{f.lookup_calls:,} calls, {f.lookup_seconds:.2f} s "
                  f"= {f.lookup_seconds / f.wall_seconds:.0%} of the batch")
    table.add_row("per row", f"{f.scans_per_row:.4g} scans, {f.queries_per_row:.4g} queries, "
                  f"{f.lookup_seconds / f.rows * 1000:.3f} ms in lookups")
    table.add_row("per lookup", f"{f.ms_per_lookup:.3f} ms")
    console.print(table)
    for line in findings(f):
        console.print(line)


def findings(f: BatchFigures) -> list[str]:
    """What the figures show, in sentences that claim nothing the batch process and PostgreSQL did not count.

    The scans are PostgreSQL's count from before the process started to
    after it ended, its import included; a lookup's time is an average.
    """
    said = []
    if f.import_queries:
        times = "once" if f.import_queries == 1 else f"{f.import_queries:,} times"
        said.append(f"[yellow]Importing {SLUG}.tasks, as a worker does at start-up, queried the category table "
                    f"{times}[/] before the batch began.")
    if f.scans > 1:
        said.append(f"A lookup took {f.ms_per_lookup:.2f} ms on average, nothing a profile of one document would "
                    f"flag. But PostgreSQL counted {f.scans:,} scans of a table that only a migration changes while "
                    f"the batch process ran, and the lookups took {f.lookup_seconds:.2f} s of its "
                    f"{f.wall_seconds:.2f} s.")
    else:
        said.append(f"PostgreSQL counted {'one scan' if f.scans == 1 else 'no scan'} of the category table while "
                    f"the batch process ran {f.rows:,} rows; the lookups took {f.lookup_seconds * 1000:.0f} ms "
                    "in all.")
    return said


# The batch process: everything below runs in the child that `run_batch` starts.

def _batch(documents: int, transactions: int) -> dict:
    import importlib

    import django

    django.setup()
    from django.db import connection

    counts = {"queries": 0, "category": 0}

    def count(execute, sql, params, many, context):
        counts["queries"] += 1
        counts["category"] += '"books_category"' in sql
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        # What a worker imports at start-up: the tasks module, and with it the lookups.
        importlib.import_module(f"{SLUG}.tasks")
    import_queries = counts["category"]
    categories = importlib.import_module(f"{SLUG}.categories")
    extractor = importlib.import_module(f"{SLUG}.extractor")
    prompts = importlib.import_module(f"{SLUG}.prompts")
    from kontor.books.models import Document, Transaction

    docs = list(Document.objects.order_by("pk")[:documents])
    txs = list(Transaction.objects.select_related("currency").order_by("pk")[:transactions])
    timer = _LookupTimer(categories)
    counts.update(queries=0, category=0)
    started = _wall_clock()
    with connection.execute_wrapper(count), timer:
        for done, document in enumerate(docs, start=1):
            prompts.document_prompt(extractor.extract(document))
            _progress(done)
        for done, transaction in enumerate(txs, start=len(docs) + 1):
            prompts.transaction_prompt(transaction)
            _progress(done)
    wall = _wall_clock() - started
    with connection.cursor() as cursor:
        # Publish this backend's counters now, before the parent samples them.
        cursor.execute("SELECT pg_stat_force_next_flush()")
    return {"rows": len(docs) + len(txs), "wall_seconds": wall, "lookup_seconds": timer.seconds,
            "lookup_calls": timer.calls, "queries": counts["queries"], "category_queries": counts["category"],
            "import_queries": import_queries}


def _wall_clock() -> float:
    """Return the machine's own clock: the batch is CPU and database work, which the lab clock does not compress."""
    from budgetlab.inworker import labtime

    return labtime.wall_monotonic()


def _progress(done: int) -> None:
    if done % 50 == 0:
        print(json.dumps({"done": done}), flush=True)


class _LookupTimer:
    """Times the three lookups as the extractor and the prompt builders call them (outermost calls only)."""

    def __init__(self, module) -> None:
        self.module, self.seconds, self.calls, self._depth = module, 0.0, 0, 0
        self._originals = {name: getattr(module, name) for name in LOOKUPS}

    def __enter__(self) -> "_LookupTimer":
        for name, function in self._originals.items():
            setattr(self.module, name, self._timed(function))
        return self

    def __exit__(self, *exc) -> None:
        for name, function in self._originals.items():
            setattr(self.module, name, function)

    def _timed(self, function):
        def timed(*args, **kwargs):
            if self._depth:
                return function(*args, **kwargs)
            self._depth += 1
            started = _wall_clock()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds += _wall_clock() - started
                self.calls += 1
                self._depth -= 1
        return timed


def _main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
    try:
        result = _batch(int(argv[0]), int(argv[1]))
    except Exception as exc:  # the learner's code: report it as one line, the parent shows it
        import traceback

        frames = [f for f in traceback.extract_tb(exc.__traceback__) if SLUG in f.filename]
        where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}{where}"}), flush=True)
        return 1
    print(json.dumps({"result": result}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
