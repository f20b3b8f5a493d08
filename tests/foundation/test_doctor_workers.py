"""`budgetlab doctor` names the leftover Celery workers of this checkout, and only those."""

import subprocess
import sys
from pathlib import Path

import pytest

from budgetlab.commands import doctoring
from budgetlab.stack import process

# Looks like a worker master to doctor; sleeps instead of consuming.
WORKER_WORDS = ["celery", "-A", "kontor.celery_app", "worker"]


def orphan(program: str) -> int:
    """Start `program` sleeping as a process whose parent has already exited (adopted by init or a subreaper)."""
    code = ("import subprocess, sys; "
            f"p = subprocess.Popen([{program!r}, '-c', 'import time; time.sleep(60)', *{WORKER_WORDS!r}], "
            "start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
            "print(p.pid, flush=True)")
    launcher = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(launcher.stdout)  # the launcher has exited: the process was reparented as it did


def test_doctor_names_this_checkouts_leftover_worker_but_not_another_checkouts():
    """An orphaned worker of this checkout's interpreter is named; one run by another interpreter is not."""
    other = "/usr/bin/python3"  # the system's interpreter, never this checkout's venv
    if not Path(other).exists():
        pytest.skip(f"{other} is missing: no second interpreter to play another checkout")
    ours = orphan(sys.executable)
    theirs = orphan(other)
    try:
        left = doctoring.leftover_workers()
        assert ours in left, f"this checkout's orphaned worker {ours} is not named: {left}"
        assert theirs not in left, f"doctor names {theirs}, a worker of another interpreter: {left}"
    finally:
        for pid in (ours, theirs):
            process.stop_pid(pid, grace=5)
