"""`budgetlab watch`: re-check a lab whenever one of its files is saved."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.console import Console

from budgetlab import labs, targets
from budgetlab.board import client as room_board
from budgetlab.commands import checking, progress

# How long a probe file's event may take before file events count as missing (network or VM mounts).
PROBE_SECONDS = 2.0


def _first_unpassed() -> labs.Lab:
    data = progress.load()
    for lab in labs.load():
        if not progress.lab_entry(data, lab.number)["passed"]:
            return lab
    return labs.load()[-1]


def file_events_arrive(folder: Path) -> bool:
    """Touch a probe file and tell whether the OS reports it; some mounts never do."""
    from watchfiles import watch as file_events

    probe = folder / ".budgetlab-watch-probe"
    stop = threading.Event()
    seen = threading.Event()

    def listen() -> None:
        for changes in file_events(folder, stop_event=stop, rust_timeout=int(PROBE_SECONDS * 1000),
                                   yield_on_timeout=True, force_polling=False):
            if any(path.endswith(probe.name) for _change, path in changes):
                seen.set()
                return
            if stop.is_set():
                return

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    time.sleep(0.1)  # let the watcher register before the probe is written
    probe.write_text("probe")
    seen.wait(PROBE_SECONDS)
    stop.set()
    probe.unlink(missing_ok=True)
    listener.join(PROBE_SECONDS + 1)
    return seen.is_set()


def watch(number: int | None, poll: bool, console: Console) -> int:
    """Check once, then again after every save, until Ctrl-C."""
    from watchfiles import watch as file_events

    lab = labs.get(number) if number is not None else _first_unpassed()
    folder = lab.starter_dir()
    if not poll and not file_events_arrive(folder):
        console.print(f"file events do not arrive from {folder}; polling for changes every 0.5 s instead")
        poll = True

    learners = targets.learners()

    def check_now() -> None:
        console.clear()
        console.print(f"watching lab {lab.number} in {folder} — save a file to check again, Ctrl-C to stop")
        try:
            outcome = checking.grade_aloud(lab, learners, console)
        except Exception as exc:  # a broken file is shown and watched again, never a crash
            console.print(f"[red]error:[/] {exc}")
            return
        progress.record_check(lab.number, outcome)
        room_board.post_check(lab.number, outcome, learners, lambda message: console.print(f"[yellow]warning:[/] {message}"))

    def stamps() -> dict[str, int]:
        return {name: (folder / name).stat().st_mtime_ns if (folder / name).exists() else 0 for name in lab.files}

    # Compare modification times as well as waiting for events: a save made while a
    # check runs, or before the watcher is registered, is then never lost.
    seen = stamps()
    check_now()
    for _changes in file_events(folder, force_polling=poll, poll_delay_ms=500, rust_timeout=1000,
                                yield_on_timeout=True,
                                watch_filter=lambda _change, path: Path(path).name in lab.files):
        current = stamps()
        if current != seen:
            seen = current
            check_now()
    return 0
