"""Lab 1 reads a master's limits from `celery inspect`; a master that answers late is read, not taken for one without."""

import os
import signal
import threading

import pytest

from budgetlab.stories.lab1 import workers

# Real worker masters on the running stack: not for `make test-quick`.
pytestmark = pytest.mark.stack

# How long each question waits for replies here; a master is silent longer than one question's wait, and, in
# the second test, than a whole round of the four; both well inside the reader's patience.
WAIT = 1.0
SILENT_FOR = 2 * WAIT
SILENT_ROUND = 4 * WAIT + 1


def test_a_master_that_answers_late_is_still_read(start_worker, celery_client, queue_name):
    """A master kept from answering by a busy machine is asked again, and its pool limits come through."""
    worker = start_worker([queue_name], [], extra_args=["--soft-time-limit", "600", "--time-limit", "900"])
    master = worker.proc.pid
    os.kill(master, signal.SIGSTOP)
    resume = threading.Timer(SILENT_FOR, os.kill, [master, signal.SIGCONT])
    resume.start()
    try:
        found = workers(celery_client, wait=WAIT)
    finally:
        resume.cancel()
        os.kill(master, signal.SIGCONT)
    assert queue_name in found, f"the master of {queue_name} was not read at all: {sorted(found)}"
    read = found[queue_name]
    assert (read.pid, read.pool) == (master, (600.0, 900.0)), (
        f"the late master was read as PID {read.pid} with pool limits {read.pool}, "
        f"not PID {master} with (600.0, 900.0)")


def test_an_expected_master_silent_through_a_whole_round_is_still_read(start_worker, celery_client, rig):
    """A master that answered none of a round, while another answered them all, is asked again when it is expected."""
    queues = [rig.queue(), rig.queue()]
    heard, silent = (start_worker([queue], [], extra_args=["--soft-time-limit", "600", "--time-limit", "900"])
                     for queue in queues)
    master = silent.proc.pid
    os.kill(master, signal.SIGSTOP)
    resume = threading.Timer(SILENT_ROUND, os.kill, [master, signal.SIGCONT])
    resume.start()
    try:
        found = workers(celery_client, expected=[*heard.ready_hostnames(), *silent.ready_hostnames()], wait=WAIT)
    finally:
        resume.cancel()
        os.kill(master, signal.SIGCONT)
    assert sorted(found) == sorted(queues), f"read the masters of {sorted(found)}, not of both {sorted(queues)}"
    assert found[queues[1]].pid == master, f"the silent master was read as PID {found[queues[1]].pid}, not {master}"
