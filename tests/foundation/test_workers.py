"""Worker trees are stopped by PID, at once when asked, and leave no process behind."""

import time
from pathlib import Path

import pytest

from budgetlab.harness.workers import Environment, WorkerTree
from budgetlab.stack import process

# Real worker trees on the running stack: not for `make test-quick`.
pytestmark = pytest.mark.stack

PROBE = str(Path(__file__).parent / "probe")


def test_kill_stops_processes_whose_parent_already_exited(tmp_path):
    """Killing a launch script's tree also stops the processes it left running when it exited."""
    script = "sleep 300 & sleep 301 & echo 'orphans@budgetlab ready.'; exit 0"
    tree = WorkerTree(["bash", "-c", script], Environment(tmp_path, "unused", "unused"), tmp_path / "tree.log")
    tree.start()
    tree.proc.wait()
    left = tree.pids()
    assert len(left) == 2, f"expected the two sleeps the script left behind, found {sorted(left)}"
    tree.kill()
    assert not any(process.pid_alive(pid) for pid in left), "a process the script left behind is still running"


def test_kill_stops_a_worker_in_the_middle_of_a_task(start_worker, celery_client, queue_name):
    """A worker killed while a task runs leaves neither its master nor its pool child behind."""
    worker = start_worker([queue_name], ["clock_probe"], extra_env={"PYTHONPATH": PROBE})
    celery_client.send_task("probe.linger", args=[100_000, True], queue=queue_name)
    deadline = time.monotonic() + 30
    while "probe.linger" not in worker.text().split("ready.", 1)[-1] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert "probe.linger" in worker.text(), "the worker never received the task"
    before = worker.pids()
    assert len(before) >= 2, f"expected a master and a pool child, found {sorted(before)}"
    worker.kill()
    assert not any(process.pid_alive(pid) for pid in before), "a process of the killed worker is still running"


def test_under_a_check_a_tree_reports_itself_and_then_that_it_is_ready(tmp_path, monkeypatch):
    """`budgetlab check` learns of each tree (its log, for a failed check) and of its readiness (the lab's code has
    imported, so no import probe is needed) from the report file, in that order."""
    import json

    from budgetlab.harness import checkreport

    report = tmp_path / "report.jsonl"
    monkeypatch.setenv(checkreport.VARIABLE, str(report))
    script = "echo 'tree@budgetlab ready.'; exec sleep 300"
    tree = WorkerTree(["bash", "-c", script], Environment(tmp_path, "unused", "unused"), tmp_path / "tree.log")
    tree.start()
    try:
        entries = [json.loads(line) for line in report.read_text().splitlines()]
    finally:
        tree.kill()
    assert [(entry["kind"], entry["pid"]) for entry in entries] == [("worker", tree.proc.pid), ("ready", tree.proc.pid)]
