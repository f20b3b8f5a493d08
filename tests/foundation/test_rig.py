"""A Rig takes down everything it set up, in order, when its block ends by an exception or by Ctrl-C."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from budgetlab import stack
from budgetlab.harness.rig import Rig
from budgetlab.stack import process

# Real workers, databases and leases on the running stack: not for `make test-quick`.
pytestmark = pytest.mark.stack

PROBE = Path(__file__).parent / "probe"
# Run in a process of its own, so that Ctrl-C reaches a rig as it would reach `budgetlab run`.
# SIGUSR1 makes it print every thread's stack, for when Ctrl-C does not end it.
# Like budgetlab's entry point, it takes Ctrl-C even when it was started with SIGINT ignored (what a
# non-interactive shell does to a command it starts in the background, CI's included).
INTERRUPTED = f"""
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)
signal.signal(signal.SIGINT, signal.default_int_handler)
from budgetlab.harness.rig import Rig
with Rig({str(PROBE)!r}, label="interrupted") as rig:
    tree = rig.start_worker([rig.queue()], ["clock_probe"])
    print(rig.folder(), rig.database_name, rig.broker_url, *sorted(tree.pids()), flush=True)
    time.sleep(120)
"""


def database_exists(name: str) -> bool:
    import psycopg

    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def lease_holder(broker_url: str) -> bytes | None:
    """The token of whoever leases the Redis database of this URL, None when nobody does.

    A rig's own token, not just any lease: with tests side by side, another
    test's rig may lease the same database the moment this one lets it go.
    """
    number = broker_url.rsplit("/", 1)[1]
    with redis.Redis.from_url(stack.redis_url(0)) as control:
        return control.get(f"budgetlab:lease:{number}")


def test_an_interrupted_rig_leaves_no_worker_database_or_lease():
    """Ctrl-C while a rig's worker runs: no worker process, scratch database, Redis lease or folder is left."""
    stack.require()
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        first = proc.stdout.readline().split()
        if len(first) < 4:
            proc.kill()
            pytest.fail(f"the rig did not start: {proc.communicate()[1][-2000:]}")
        folder, name, broker, *pids = first
        holder = lease_holder(broker)
        assert pids and database_exists(name) and holder, "the rig did not set up its pieces"
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
    assert lease_holder(broker) != holder, f"the Redis database {broker} is still leased by the rig"
    assert not Path(folder).exists(), f"the rig's folder {folder} outlived the rig"


def test_a_killed_rig_process_takes_its_worker_with_it():
    """SIGKILL, which no clean-up survives: the kernel still ends the worker master, and the master its pool child."""
    stack.require()
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        folder, _name, _broker, *pids = proc.stdout.readline().split()
        pids = [int(pid) for pid in pids]
        assert len(pids) >= 2, f"the worker has no pool child to follow its master: {pids}"
        started = {pid: process.start_ticks(pid) for pid in pids}
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _same_processes(started):
            time.sleep(0.05)
        left = _same_processes(started)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in _same_processes(started):  # a failed run still leaves nothing behind
        os.kill(pid, signal.SIGKILL)
    _free_what_a_killed_rig_held(proc.pid, folder, _name, _broker)
    assert not left, f"worker processes {left} outlived the killed rig process"


def _free_what_a_killed_rig_held(pid: int, folder: str, name: str, broker_url: str) -> None:
    """Remove the folder, drop the scratch database and end the lease that the SIGKILLed process could not.

    The lease only if it is still that process's own. The folder is the
    rig's mkdtemp under the temporary directory (each run of the suite left
    one, with the worker's log, until this removed it).
    """
    import psycopg
    from psycopg import sql

    shutil.rmtree(folder, ignore_errors=True)
    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    key = f"budgetlab:lease:{broker_url.rsplit('/', 1)[1]}"
    with redis.Redis.from_url(stack.redis_url(0)) as control:
        if (control.get(key) or b"").startswith(f"{pid}-".encode()):
            control.delete(key)


def _same_processes(started: dict[int, int | None]) -> list[int]:
    """The PIDs of `started` still alive as the very processes seen (their start time tells a reused PID apart)."""
    return [pid for pid, ticks in started.items() if process.pid_alive(pid) and process.start_ticks(pid) == ticks]


def test_a_failing_block_takes_the_worker_down_before_the_database():
    """An exception in the block: the worker is gone by the time its database is dropped, and both are gone after."""
    stack.require()
    seen = {}
    with pytest.raises(RuntimeError, match="lab code broke"):
        with Rig(PROBE, label="failing") as rig:
            tree = rig.start_worker([rig.queue()], ["clock_probe"])
            pids, name, broker = tree.pids(), rig.database_name, rig.broker_url
            holder = lease_holder(broker)
            drop = rig._drop_database

            def drop_after_workers() -> None:
                seen["alive at drop"] = [pid for pid in pids if process.pid_alive(pid)]
                drop()

            rig._drop_database = drop_after_workers
            raise RuntimeError("lab code broke")
    assert seen["alive at drop"] == [], "a worker still ran when its database was dropped"
    assert holder and not database_exists(name) and lease_holder(broker) != holder


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


def test_a_prefork_workers_temporary_folder_goes_with_the_rig():
    """A prefork master makes a temporary folder (billiard's shared heap, pymp-*) that a tree killed by PID never
    removes; it is made inside the rig's folder, and nothing of it is left once the rig has closed."""
    from budgetlab.stories.reading import wait_until

    stack.require()
    with Rig(PROBE, label="scratch") as rig:
        rig.start_worker([rig.queue()], ["clock_probe"], concurrency=2, pool="prefork")
        scratch = rig.folder() / "tmp"
        assert wait_until(lambda: any(scratch.glob("pymp-*")), time.monotonic() + 30), (
            f"the prefork worker made no temporary folder in {scratch}: where does it make it?")
    assert not scratch.exists(), f"{scratch} outlived the rig"
