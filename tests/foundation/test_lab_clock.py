"""Every process a lab starts runs on production time at the lab's speed, through Python's own APIs.

The probes run inside real Celery workers (prefork, Celery's own pool),
started by the rig as every lab's workers are. Each way of reading time
must agree with the others and with the grader's conversion, and each
way of waiting must take its production seconds on the lab clock: never
the same number of wall seconds.
"""

import re
import time
from pathlib import Path

import pytest

from budgetlab.inworker import clock
from budgetlab.stories.lab1 import workers
from budgetlab.stories.reading import settled, stored_at

PROBE = str(Path(__file__).parent / "probe")
# A wait that production code might write, in production seconds.
WAIT = 40.0
# On two busy cores a wait may end this many wall seconds late; never early.
LATE = 0.5
# The probes run again on the second Python (tests/conftest's second pass), whose threading and locks differ.
pytestmark = [pytest.mark.stack, pytest.mark.second_python]


@pytest.fixture
def probe_worker(start_worker, queue_name):
    return start_worker([queue_name], ["clock_probe"], concurrency=2, extra_env={"PYTHONPATH": PROBE},
                        extra_args=["--soft-time-limit", "120"])


def _stepped(waited: float, realtime: list[float]) -> float:
    """Production seconds the machine's realtime clock ran ahead of its monotonic one during a wait, else 0.

    A semaphore's time-out (sem_timedwait) and a Redis expiry end on the
    realtime clock; when the host steps it forward (a virtual machine's
    clock catching up; a rehearsal saw them end 0.85 and 14.6 ms of wall
    time early within one minute), they end that much sooner by a
    monotonic clock.
    """
    return clock.to_production(max(realtime[0] - waited, 0.0)) if realtime else 0.0


def test_every_way_of_waiting_takes_its_production_seconds(probe_worker, celery_client, queue_name):
    """time.sleep, thread waits, select, selectors, sockets, asyncio, itimers and a child process all wait on the lab clock."""
    result = celery_client.send_task("probe.waits", args=[WAIT], queue=queue_name)
    assert settled(result, 60), "the probe did not come back"
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    wall = clock.to_wall(WAIT)
    problems = []
    for name, (production, waited, *realtime) in result.result.items():
        if production < WAIT * 0.999 - _stepped(waited, realtime):
            problems.append(f"{name}: ended after {production:.2f} production seconds of {WAIT:g}")
        elif not wall * 0.95 <= waited <= wall + LATE:
            problems.append(f"{name}: took {waited:.3f} wall seconds")
    # Every way that missed, in one message: a change to the clock breaks several at once.
    assert not problems, f"{WAIT:g} production seconds are {wall:.3f} wall seconds here; " + "; ".join(problems)


def test_every_clock_reads_the_same_production_time(probe_worker, celery_client, queue_name):
    """time.time, datetime.now/utcnow, Django's timezone.now and PostgreSQL's now() agree with the grader's conversion."""
    before = clock.production_now()
    result = celery_client.send_task("probe.readings", queue=queue_name)
    assert settled(result, 30), "the probe did not come back"
    after = clock.production_now()
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    readings = dict(result.result)
    today = readings.pop("date.today")
    problems = [f"{name} read {value:.1f}" for name, value in readings.items() if not before - 1 <= value <= after + 1]
    assert not problems, (f"outside the production time {before:.1f}..{after:.1f} the grader converted: "
                          + "; ".join(problems))
    assert today == time.strftime("%Y-%m-%d", time.localtime(readings["time.time"]))


def test_a_record_the_grader_writes_is_as_old_as_a_worker_reads_it(probe_worker, celery_client, queue_name):
    """A row the grader creates as Kontor's web process would (created_at) is seconds old to a worker, not hours."""
    from kontor.books.models import AgentRun, Company

    company = Company.objects.order_by("id").first()
    # Taken before the row is written: its created_at is stamped before the INSERT's round trip, which a busy
    # machine stretches by milliseconds, and a millisecond is a fifth of a production second here.
    writing = time.monotonic()
    asked = AgentRun.objects.create(company=company, goal="how old am I?", steps=[])
    result = celery_client.send_task("probe.readings", queue=queue_name)
    assert settled(result, 30), "the probe did not come back"
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    age = result.result["timezone.now"] - asked.created_at.timestamp()
    # However busy the machine, the question can be no older than the wall time since it was written.
    assert -1 <= age <= clock.to_production(time.monotonic() - writing) + 1, (
        f"a worker read the question as {age:,.0f} production seconds old, "
        f"{time.monotonic() - writing:.2f} wall seconds after it was written")


def test_a_day_in_sql_is_the_lab_clock_s_day(probe_worker, celery_client, queue_name):
    """On a connection whose lab clock is years ahead, SQL's one-argument age() and CURRENT_DATE count from its date."""
    result = celery_client.send_task("probe.database_day", queue=queue_name)
    assert settled(result, 30), "the probe did not come back"
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    day = result.result
    assert -86400 < day["age(now())"] <= 0, f"age(now()) was {day['age(now())']:,.0f} s: it counted from another day"
    assert day["CURRENT_DATE is now()'s date"], "CURRENT_DATE is not the date now() reads"


# A Redis key's life in the probes below, in production seconds: one wall second at the default clock.
LEASE = 200


@pytest.mark.external
def test_every_way_of_setting_a_redis_expiry_lives_its_production_seconds(probe_worker, celery_client, queue_name):
    """SET EX, Lua scripts (EVAL, register_script's EVALSHA, Lock.extend and reacquire) and redis.asyncio all expire
    on the lab clock, and TTL/PTTL, in a script or not, read production seconds."""
    result = celery_client.send_task("probe.redis_expiries", args=[LEASE], queue=queue_name)
    assert settled(result, 60), "the probe did not come back"
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    late = 1 + clock.to_production(LATE)
    problems = [f"{name}: still there after {3 * LEASE} s" if lived is None else f"{name}: lived {lived:.1f} s"
                for name, lived in result.result["lived"].items()
                if lived is None or not LEASE - 1 <= lived <= LEASE + late]
    readings = dict(result.result["readings"])
    after = readings.pop("read after")
    problems += [f"{name} read {value:.1f} s" for name, value in readings.items()
                 if not LEASE - after - 1 <= value <= LEASE]
    assert not problems, f"keys given {LEASE} production seconds: " + "; ".join(problems)


# A Redis reply this late, in wall seconds: longer than a time-out of redis-py's default 5 production seconds (or
# the socket floor under it) would wait on the lab clock, far shorter than the 5 wall seconds it waits in production.
SLOW_REPLY = 0.3


def test_redis_clients_wait_for_a_slow_reply_as_long_as_in_production(probe_worker, celery_client, queue_name):
    """redis-py's default time-outs, blocking and asyncio, keep their wall seconds: a reply a busy machine delays
    0.3 s is no time-out (a rehearsal's probe failed with redis.exceptions.TimeoutError)."""
    result = celery_client.send_task("probe.slow_redis_replies", args=[SLOW_REPLY], queue=queue_name)
    assert settled(result, 60), "the probe did not come back"
    assert result.state == "SUCCESS", f"the probe failed: {result.result!r}"
    assert result.result == {"blocking": "PONG", "asyncio": "PONG"}, f"a reply {SLOW_REPLY} s late: {result.result}"


def test_a_redis_key_expires_on_the_lab_clock(probe_worker, celery_client, queue_name):
    """A key set with SET NX EX lives its production seconds, a twenty-minute lease 6 s of wall time here."""
    result = celery_client.send_task("probe.redis_expiry", args=[1200], queue=queue_name)
    assert settled(result, 60), "the probe did not come back"
    lived = result.result["lived"]
    early = 1 + _stepped(result.result["waited"], [result.result["realtime"]])
    assert 1200 - early <= lived <= 1200 + 1 + clock.to_production(LATE), f"a 1200 s key lived {lived:.1f} production seconds"


def test_soft_limit_fires_at_its_production_budget(probe_worker, celery_client, queue_name):
    """Celery's own prefork fires a 600 s soft limit after 600 production seconds, 600 x factor wall seconds."""
    result = celery_client.send_task("probe.linger", args=[5000, False], queue=queue_name)
    assert settled(result, 30), "the probe did not come back"
    soft = result.result
    # The pool arms the timer as the child takes the task, a moment before the task's own code reads the clock.
    early = clock.to_production(0.005)
    assert 600 - early <= soft["soft_at"] <= 600 + clock.to_production(LATE), f"soft limit after {soft['soft_at']:.1f} s"
    assert clock.to_wall(600) * 0.95 <= soft["soft_at_wall"] <= clock.to_wall(600) + LATE, (
        f"soft limit after {soft['soft_at_wall']:.3f} wall seconds")


@pytest.mark.external
def test_hard_limit_kills_and_reports_production_seconds(probe_worker, celery_client, queue_name):
    """A task that ignores its soft limit is killed at 900 production seconds and the caller sees TimeLimitExceeded(900)."""
    started = time.monotonic()
    result = celery_client.send_task("probe.linger", args=[5000, True], queue=queue_name)
    assert settled(result, 30), "the probe did not come back"
    elapsed = time.monotonic() - started
    assert result.state == "FAILURE"
    assert type(result.result).__name__ == "TimeLimitExceeded", f"caller saw {result.result!r}"
    assert result.result.args[0] == pytest.approx(900), f"caller saw {result.result!r}, expected production seconds"
    assert elapsed >= clock.to_wall(900), f"killed after {elapsed:.3f} s wall, before the hard limit"
    # The pool sends SIGTERM, then SIGKILL 0.1 production seconds (half a millisecond here) later: the child
    # may end on either, as a loaded machine decides (workers.KILLED names both endings).
    deadline = time.monotonic() + 5
    while not probe_worker.killed_children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert probe_worker.killed_children(), "no pool child was ended by the hard limit's signals"
    assert re.search(r"Hard time limit \(900(\.0)?s\) exceeded", probe_worker.text()), "no hard-limit line in the log"


def test_inspect_shows_the_pool_defaults_as_set(probe_worker, celery_client):
    """inspect().stats() reports the worker flag's 120 s (asked again while a busy machine keeps the master silent)."""
    pools = [master.pool for master in workers(celery_client, expected=probe_worker.ready_hostnames()).values()]
    assert pools, "the worker did not answer celery inspect"
    assert pools[0][0] == 120


# After a hard kill the pool must replace the child and start the next task within this many
# production seconds (Celery's supervisor looks every 5 s; a pipe closing tells it sooner).
REPLACED_WITHIN = 150


def test_the_next_task_starts_soon_after_a_hard_kill(start_worker, celery_client, queue_name):
    """With one child, the task queued behind a killed one starts within 150 production seconds of the kill, every time."""
    start_worker([queue_name], ["clock_probe"], concurrency=1, extra_env={"PYTHONPATH": PROBE})
    for round_ in range(4):
        killed = celery_client.send_task("probe.stuck", queue=queue_name)
        after = celery_client.send_task("probe.now", queue=queue_name)
        assert settled(after, 30), f"round {round_ + 1}: the task behind the killed one never ran"
        assert type(killed.result).__name__ == "TimeLimitExceeded", f"round {round_ + 1}: {killed.result!r}"
        waited = after.result - stored_at(killed)
        assert waited <= REPLACED_WITHIN, (f"round {round_ + 1}: the next task started {waited:.0f} production seconds "
                                           "after the hard kill")


@pytest.mark.parametrize("clock_env", [{}, {"BUDGETLAB_CLOCK": "0.005", "BUDGETLAB_CLOCK_ANCHOR": "1"}],
                         ids=["no clock", "clock"])
def test_the_boot_folder_starts_python_quietly_and_runs_the_sitecustomize_it_shadows(tmp_path, clock_env):
    """A process with the boot folder on its path, on the lab clock or not, prints nothing and chains on."""
    import os
    import subprocess
    import sys

    shadowed = tmp_path / "sitecustomize.py"
    shadowed.write_text("import builtins\nbuiltins.SHADOWED_RAN = True\n")
    env = {key: value for key, value in os.environ.items() if not key.startswith("BUDGETLAB_CLOCK")}
    env.update(clock_env, PYTHONPATH=os.pathsep.join([str(clock.BOOT_DIR), str(tmp_path)]))
    result = subprocess.run([sys.executable, "-c", "import builtins; print(getattr(builtins, 'SHADOWED_RAN', False))"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.stderr == "", result.stderr
    assert result.stdout.strip() == "True"
