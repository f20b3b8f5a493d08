"""`budgetlab run 7`: one 95-file bulk upload on two acks_late workers, and the same task arriving a second time.

Two real workers with the learner's code consume one queue on the real
Redis transport. One upload of slow model calls runs past the broker's
visibility timeout; kombu's own restore sweep takes its unacknowledged
message back and the idle worker receives the same task id while the
first run still works. The view prints the deliveries as they happen,
then the three numbers side by side (the hard limit, the visibility
timeout, how long the first run really took) and the effects counted in
the database and the model stand-in's call log. A third worker, started
beside them, tries the deployment's start-up check with a ten-day budget.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from budgetlab.stories import lab7

FILES = 95
# A slow day at the model: 40 s per receipt, so the model calls alone take over an hour.
MODEL_SECONDS = 40.0
RECEIVED = re.compile(r"Task [\w.]+\[(?P<id>[\w-]+)\] received")
ENDED = re.compile(r"Task [\w.]+\[(?P<id>[\w-]+)\] (?P<how>succeeded|raised \w+: \w+|raised unexpected: \w+)")
# A run its hard limit ends logs no line of its own: the pool logs this (Celery 5.6's Request.on_timeout,
# celery/worker/request.py:539). A busy machine stretches a run past it (a rehearsal's second run of the starter).
KILLED = re.compile(r"Hard time limit \((?P<limit>[\d.]+)s\) exceeded for [\w.]+\[(?P<id>[\w-]+)\]")


def play(target_dir: Path, console: Console) -> int:
    """Play the scenario against target_dir/lab7_uploads; 0 when it ran, whatever it showed."""
    with lab7.lab_clock(lab7.RUN_CLOCK) as factor:
        return _play(target_dir, console, factor)


def _play(target_dir: Path, console: Console, factor: float) -> int:
    from budgetlab.harness.rig import Rig, WorkerDidNotStart
    from budgetlab.inworker import clock

    if str(target_dir) not in sys.path:
        sys.path.insert(0, str(target_dir))
    console.print(f"One {FILES}-file bulk upload, two acks_late workers on Redis\n"
                  f"your code: {target_dir.name}/{lab7.SLUG}/ (settings.py, uploads.py, preflight.py)\n"
                  f"{clock.describe()}: an hour of production passes in {clock.to_wall(3600):.2f} s\n")
    with Rig(target_dir, label="run7") as rig, rig.django():
        long_budget = lab7.start_with_long_budget(rig)
        try:
            day = lab7.Day(rig, MODEL_SECONDS)
        except WorkerDidNotStart as exc:
            console.print(f"[bold red]The upload workers did not start:[/] {exc.tree.last_error() or exc}")
            _show_start_attempt(console, long_budget())
            return 0
        upload = lab7.create_upload(FILES)
        task_id = day.send(upload.pk)
        sent = time.monotonic()
        first_run = _watch(console, day, task_id, upload.pk, sent, factor)
        _show_numbers(console, target_dir, first_run)
        _show_effects(console, lab7.read_effects(upload.pk, day.call_log))
        _show_start_attempt(console, long_budget())
    return 0


# Wall seconds the watch keeps reading the workers' logs once every delivery has ended, for the lines that say how
# each run ended (a busy machine once let the row turn final before the worker had logged its end: the line was lost).
ENDING_GRACE = 2.0


def _watch(console: Console, day: lab7.Day, task_id: str, upload_id: int, sent: float, factor: float) -> float | None:
    """Print every delivery and ending of the task as it happens; return how long the first run took (production s)."""
    from kontor.books.models import BulkUpload

    # Named in the order they receive the task, not started: which idle worker gets a message is a race.
    names: dict[int, str] = {}
    seen: dict[int, tuple[int, int]] = {id(tree): (0, 0) for tree in day.started}
    killed: dict[int, int] = {}  # runs of the task each worker's pool logged ending at their hard limit
    started: list[float] = []
    first_run = None
    deadline = sent + 4 * lab7.run_wait()
    final_at = None  # when the workers' logs showed every delivery ended and none was waiting
    console.print(f"{'production s':>12}  {'where':<9} what")
    console.print(f"{0:>12,}  {'web':<9} upload {upload_id} sent, {FILES} files, task id {task_id[:8]}")
    while time.monotonic() < deadline:
        now = (time.monotonic() - sent) / factor
        for tree in day.started:
            text = tree.text()
            came = len([m for m in RECEIVED.finditer(text) if m["id"] == task_id])
            kills = [m for m in KILLED.finditer(text) if m["id"] == task_id]
            killed[id(tree)] = len(kills)
            ends = [how for _at, how in sorted(
                [(m.start(), m["how"]) for m in ENDED.finditer(text) if m["id"] == task_id]
                + [(m.start(), f"killed at its {float(m['limit']):,.0f} s hard limit") for m in kills])]
            old_came, old_ends = seen[id(tree)]
            if came > old_came and id(tree) not in names:
                names[id(tree)] = f"worker {chr(ord('A') + len(names))}"
            for _ in range(came - old_came):
                done = BulkUpload.objects.get(pk=upload_id).items_done
                running = len(started) - sum(seen[key][1] for key in seen)
                note = (f" [bold red]again[/], while {running} run{'s' if running > 1 else ''} of it still "
                        f"work{'' if running > 1 else 's'}"
                        f" ({done} files counted so far)") if started else ""
                started.append(now)
                console.print(f"{now:>12,.0f}  {names[id(tree)]:<9} received task {task_id[:8]}{note}")
            for how in ends[old_ends:]:
                if first_run is None:
                    first_run = now - started[0]
                console.print(f"{now:>12,.0f}  {names[id(tree)]:<9} run ended: {how}")
            seen[id(tree)] = (came, len(ends))
        # Every delivery ended and none waiting: nothing more will happen, whether the upload is final or not
        # (a run that raised, or that its hard limit ended, leaves it open).
        if final_at is None and day.settle(task_id, 0, killed=sum(killed.values())):
            final_at = time.monotonic()
        ended = sum(ends for _came, ends in seen.values())
        if final_at is not None and (ended >= len(started) or time.monotonic() > final_at + ENDING_GRACE):
            break
        time.sleep(lab7.POLL)
    else:
        console.print("[yellow]still running when the watch ended; the rig stops it now[/]")
    console.print()
    return first_run


def _show_numbers(console: Console, target_dir: Path, first_run: float | None) -> None:
    try:
        timeout = lab7.configured_visibility_timeout()
        source = "settings.py" if timeout != lab7.DEFAULT_VISIBILITY_TIMEOUT else "kombu's default: nothing sets it"
    except Exception as exc:  # the learner's settings: shown, not raised
        timeout, source = None, f"settings.py does not import: {exc}"
    table = Table(title="Three numbers nobody put side by side", title_justify="left")
    table.add_column("")
    table.add_column("production seconds", justify="right")
    table.add_column("where it comes from")
    table.add_row("the upload's hard time limit", f"{lab7.HARD_LIMIT:,}", "uploads.py, raised after lab 1")
    table.add_row("the broker's visibility timeout", "?" if timeout is None else f"{timeout:,.0f}", source)
    table.add_row("how long the first run really took", "?" if first_run is None else f"{first_run:,.0f}",
                  "measured on the lab clock")
    console.print(table)


def _show_effects(console: Console, effects: lab7.Effects) -> None:
    doubled = len(effects.duplicated_files)
    rows = sum(effects.documents.values())
    colour = "red" if doubled or effects.letters != 1 or effects.total_calls > effects.files else "green"
    console.print(f"\n[bold {colour}]What the customer got:[/] {rows} documents for {effects.files} receipts "
                  f"({doubled} booked more than once), {effects.letters} letter(s), {effects.total_calls} "
                  f"model calls billed (the stand-in's log); the upload ended '{effects.status}'.")


def _show_start_attempt(console: Console, attempt: lab7.StartAttempt) -> None:
    if attempt.started:
        console.print(f"\n[bold red]Start-up check:[/] a worker whose task {lab7.LONG_TASK} may run "
                      f"{lab7.LONG_LIMIT:,} s started without a word.")
        return
    last = [line for line in attempt.output.splitlines() if line.strip()][-1:] or ["(no output)"]
    console.print(f"\n[bold green]Start-up check:[/] a worker with a {lab7.LONG_LIMIT:,} s task refused to start "
                  f"(exit status {attempt.returncode}): {last[0].strip()}")
