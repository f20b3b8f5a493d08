"""A Rig takes down everything it set up, in order, when its block ends by an exception or by Ctrl-C."""

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from budgetlab import stack
from budgetlab.harness.rig import Rig
from budgetlab.stack import process

PROBE = Path(__file__).parent / "probe"
# Run in a process of its own, so that Ctrl-C reaches a rig as it would reach `budgetlab run`.
# SIGUSR1 makes it print every thread's stack, for when Ctrl-C does not end it.
INTERRUPTED = f"""
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
from budgetlab.harness.rig import Rig
with Rig({str(PROBE)!r}, label="interrupted") as rig:
    tree = rig.start_worker([rig.queue()], ["clock_probe"])
    print(rig.database_name, rig.broker_url, *sorted(tree.pids()), flush=True)
    time.sleep(120)
"""


def database_exists(name: str) -> bool:
    import psycopg

    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def leased(broker_url: str) -> bool:
    """Whether the Redis database of this URL is still leased by anyone."""
    number = broker_url.rsplit("/", 1)[1]
    with redis.Redis.from_url(stack.redis_url(0)) as control:
        return control.exists(f"budgetlab:lease:{number}") == 1


def test_an_interrupted_rig_leaves_no_worker_database_or_lease():
    """Ctrl-C while a rig's worker runs: no worker process, scratch database or Redis lease is left."""
    stack.require()
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        name, broker, *pids = proc.stdout.readline().split()
        assert pids and database_exists(name) and leased(broker), "the rig did not set up its pieces"
        proc.send_signal(signal.SIGINT)
        try:
            _, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.communicate(timeout=5)  # the dump arrives while the process still hangs
            proc.kill()
            _, stderr = proc.communicate()
            alive = [pid for pid in map(int, pids) if process.pid_alive(pid)]
            pytest.fail(f"the rig's process still ran 60 s after Ctrl-C (worker PIDs still alive: {alive}); "
                        f"its threads were at:\n{stderr[-6000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "KeyboardInterrupt" in stderr, f"the rig's process did not end by Ctrl-C: {stderr[-400:]}"
    assert not [pid for pid in map(int, pids) if process.pid_alive(pid)], "a worker process outlived the rig"
    assert not database_exists(name), f"the scratch database {name} outlived the rig"
    assert not leased(broker), f"the Redis database {broker} is still leased"


def test_a_failing_block_takes_the_worker_down_before_the_database():
    """An exception in the block: the worker is gone by the time its database is dropped, and both are gone after."""
    stack.require()
    seen = {}
    with pytest.raises(RuntimeError, match="lab code broke"):
        with Rig(PROBE, label="failing") as rig:
            tree = rig.start_worker([rig.queue()], ["clock_probe"])
            pids, name, broker = tree.pids(), rig.database_name, rig.broker_url
            drop = rig._drop_database

            def drop_after_workers() -> None:
                seen["alive at drop"] = [pid for pid in pids if process.pid_alive(pid)]
                drop()

            rig._drop_database = drop_after_workers
            raise RuntimeError("lab code broke")
    assert seen["alive at drop"] == [], "a worker still ran when its database was dropped"
    assert not database_exists(name) and not leased(broker)


def test_django_points_at_the_rig_database_only_inside_the_block():
    """rig.django() sends this process's queries to the rig's database, and puts the previous one back after."""
    stack.require()
    from budgetlab.harness.rig import configure_django

    configure_django(stack.database_url())
    from django.db import connections

    before = connections["default"].settings_dict["NAME"]
    with Rig(PROBE, label="django") as rig, rig.django():
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT current_database()")
            assert cursor.fetchone()[0] == rig.database_name
    assert connections["default"].settings_dict["NAME"] == before
    assert not database_exists(rig.database_name), "the rig's database outlived it"


def test_a_rig_that_only_sends_tasks_copies_no_database():
    """Pieces are made on first use: a rig asked only for a broker creates no scratch database."""
    stack.require()
    with Rig(PROBE, label="broker-only") as rig:
        assert rig.broker_url.startswith("redis://")
    assert rig._database_url is None, "a rig that never used its database copied one"
