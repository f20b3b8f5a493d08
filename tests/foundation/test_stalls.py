"""A stall holds the one write it names until its client gives the connection up, and never the next one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from budgetlab import stack
from budgetlab.harness import stalls
from budgetlab.harness.rig import Rig

# A real database on the running stack: not for `make test-quick`.
pytestmark = pytest.mark.stack

PROBE = Path(__file__).parent / "probe"


def _sleepers(cursor) -> list[str]:
    cursor.execute("SELECT application_name FROM pg_stat_activity WHERE datname = current_database() "
                   "AND application_name LIKE %s", [stalls.APPLICATION_PREFIX + "%"])
    return [row[0] for row in cursor.fetchall()]


def _probe_table(cursor, columns: str) -> None:
    """Create the probe table lab code may write, as Kontor's tables are."""
    cursor.execute(f"CREATE TABLE public.budgetlab_stall_probe ({columns})")
    if stack.lab_role():
        cursor.execute(f'GRANT ALL ON public.budgetlab_stall_probe TO "{stack.lab_role()}"')


def _wait(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_the_held_write_sleeps_until_its_client_leaves_and_the_next_one_goes_through():
    stack.require()
    from django.db import connection

    with Rig(PROBE, label="stalls") as rig, rig.django():
        with connection.cursor() as cursor:
            _probe_table(cursor, "id int PRIMARY KEY, n int")
            cursor.execute("INSERT INTO public.budgetlab_stall_probe VALUES (1, 0), (2, 0)")
        held = stalls.Stall("probe_second", "budgetlab_stall_probe", "UPDATE", "NEW.id = 1", nth=2)
        stalls.install([held])
        url = stack.lab_database_url(rig.database_name)  # lab code's role, as the workers connect
        writer = psycopg.connect(url, autocommit=True)
        writer.execute("UPDATE public.budgetlab_stall_probe SET n = 1 WHERE id = 1")  # the first: not held
        assert not stalls.fired(held)
        outcome = {}

        def second_write() -> None:
            try:
                writer.execute("UPDATE public.budgetlab_stall_probe SET n = 2 WHERE id = 1")
                outcome["done"] = True
            except psycopg.Error as exc:
                outcome["error"] = exc

        thread = threading.Thread(target=second_write, daemon=True)
        thread.start()
        with connection.cursor() as cursor:
            assert _wait(lambda: _sleepers(cursor) == [stalls.APPLICATION_PREFIX + "probe_second"]), \
                "the second write never slept"
            assert stalls.fired(held)
            # Other rows, and other connections, are not held.
            other = psycopg.connect(url, autocommit=True)
            other.execute("UPDATE public.budgetlab_stall_probe SET n = 9 WHERE id = 2")
            # The client gives its connection up, as Kontor's job_mark_failed does after an interrupted query:
            # the sleeper ends, the held write is never made, and the row's next write goes through at once.
            writer.pgconn.finish()
            assert _wait(lambda: not _sleepers(cursor)), "the held write outlived its client"
            started = time.monotonic()
            other.execute("UPDATE public.budgetlab_stall_probe SET n = 3 WHERE id = 1")
            assert time.monotonic() - started < 5
            other.close()
            cursor.execute("SELECT n FROM public.budgetlab_stall_probe ORDER BY id")
            assert [row[0] for row in cursor.fetchall()] == [3, 9]
        thread.join(5)
        assert "done" not in outcome


def test_release_ends_a_sleeper_whose_client_stays():
    stack.require()
    from django.db import connection

    with Rig(PROBE, label="stalls") as rig, rig.django():
        with connection.cursor() as cursor:
            _probe_table(cursor, "id int PRIMARY KEY")
        held = stalls.Stall("probe_insert", "budgetlab_stall_probe", "INSERT", "NEW.id > 0")
        stalls.install([held])
        writer = psycopg.connect(stack.lab_database_url(rig.database_name), autocommit=True)
        failed = {}

        def write() -> None:
            try:
                writer.execute("INSERT INTO public.budgetlab_stall_probe VALUES (1)")
            except psycopg.Error as exc:
                failed["error"] = exc

        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        with connection.cursor() as cursor:
            assert _wait(lambda: bool(_sleepers(cursor)))
            assert stalls.release() == 1
            thread.join(10)
            assert "error" in failed, "the released write went through"
            cursor.execute("SELECT count(*) FROM public.budgetlab_stall_probe")
            assert cursor.fetchone()[0] == 0
        writer.close()
