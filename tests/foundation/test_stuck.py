"""A process of lab code past its deadline says where it was: the lab line on its stack, and whether it computed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from budgetlab.harness import stuck

LAB_CODE = {
    "waits": """
        import threading
        lock = threading.Lock()

        def lookup():
            with lock:
                return table()

        def table():
            with lock:  # the same lock again: this thread waits for itself
                return ()
        """,
    "computes": """
        def lookup():
            total = 0
            while True:
                total += 1
        """,
}
# The lines of each lab file the process may be on when it is asked (a loop is caught on its test or its body).
LINES = {"waits": {9}, "computes": {3, 4}}
NAME = {"waits": "table", "computes": "lookup"}


def _start(folder: Path, behaviour: str) -> tuple[subprocess.Popen, float]:
    (folder / "lab").mkdir(parents=True)
    (folder / "lab" / "lookups.py").write_text(textwrap.dedent(LAB_CODE[behaviour]).lstrip("\n"))
    runner = ("import sys; sys.path.insert(0, sys.argv[1]); from budgetlab.harness import stuck; stuck.arm(); "
              "print('armed', flush=True); from lab import lookups; lookups.lookup()")
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", runner, str(folder)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    assert process.stdout.readline().strip() == "armed"
    return process, started


@pytest.mark.parametrize("behaviour", sorted(LAB_CODE))
def test_a_stuck_process_names_its_lab_line_and_what_it_did(tmp_path, behaviour):
    """A thread that waits for a lock it holds, or loops, is found on its lab line; its CPU says which it did."""
    process, started = _start(tmp_path, behaviour)
    time.sleep(1.0)  # long enough that CPU time tells a loop from a wait
    seen = stuck.ask(process, started, tmp_path / "lab")
    assert process.returncode is not None, "ask() left the process running"
    assert seen.frame is not None, seen
    path, line, name = seen.frame
    assert (path, name) == ((tmp_path / "lab" / "lookups.py").resolve(), NAME[behaviour]), seen
    assert line in LINES[behaviour], seen
    assert seen.seconds >= 1.0
    if seen.cpu is not None:  # /proc: Linux
        assert seen.computing is (behaviour == "computes"), seen


def test_the_signalled_threads_frame_comes_first_and_other_folders_are_skipped(tmp_path):
    """In a dump of several threads, the innermost frame under the folder of the signalled ("Current") thread."""
    lab = tmp_path / "lab"
    dump = "\n".join([
        "Thread 0x00007f0000000002 (most recent call first):",
        f'  File "{lab}/worker.py", line 3 in helper',
        "",
        "Current thread 0x00007f0000000001 (most recent call first):",
        f'  File "{tmp_path}/site-packages/django/db/utils.py", line 40 in execute',
        f'  File "{lab}/lookups.py", line 12 in category',
        f'  File "{lab}/lookups.py", line 20 in category_for',
    ])
    assert stuck.innermost(dump, lab) == ((lab / "lookups.py").resolve(), 12, "category")
    assert stuck.innermost(dump.replace("Current thread", "Thread"), lab) == ((lab / "worker.py").resolve(), 3,
                                                                               "helper")
    assert stuck.innermost("", lab) is None
