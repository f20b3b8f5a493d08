"""Lab 1 reads a master's limits from `celery inspect`; a master that answers late is read, not taken for one without."""

import os
import signal
import threading

import pytest

from budgetlab.stories.lab1 import workers

# Real worker masters on the running stack: not for `make test-quick`.
pytestmark = pytest.mark.stack

# Longer than one question's 3 s wait for replies, well inside the reader's patience.
SILENT_FOR = 4.0


def test_a_master_that_answers_late_is_still_read(start_worker, celery_client, queue_name):
    """A master kept from answering by a busy machine is asked again, and its pool limits come through."""
    worker = start_worker([queue_name], [], extra_args=["--soft-time-limit", "600", "--time-limit", "900"])
    master = worker.proc.pid
    os.kill(master, signal.SIGSTOP)
    resume = threading.Timer(SILENT_FOR, os.kill, [master, signal.SIGCONT])
    resume.start()
    try:
        found = workers(celery_client)
    finally:
        resume.cancel()
        os.kill(master, signal.SIGCONT)
    assert queue_name in found, f"the master of {queue_name} was not read at all: {sorted(found)}"
    read = found[queue_name]
    assert (read.pid, read.pool) == (master, (600.0, 900.0)), (
        f"the late master was read as PID {read.pid} with pool limits {read.pool}, "
        f"not PID {master} with (600.0, 900.0)")
