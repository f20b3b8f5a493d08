"""Which worker pool applies which time limit, measured on real Celery 5.6 workers of every pool.

The docs' concept table (docs/concepts/pools.md) and lab 6 rest on these
rows. Each test starts a real worker of one pool, sends one task that
declares a soft and a hard limit and outlives both, and reads how it
ended. gevent and eventlet are an optional extra (pip install -e
'.[pools]'); their tests skip, saying why, when the package is missing.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

from budgetlab.harness.rig import Rig
from budgetlab.harness.workers import FAST_FLAGS, unique_hostname

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.stack, pytest.mark.slow]


def _needs(module: str):
    return pytest.mark.skipif(importlib.util.find_spec(module) is None,
                              reason=f"the {module} pool needs the optional extra: pip install -e '.[pools]'")


def run_probe(pool: str, tmp_path: Path, lab_clock: str = "1") -> tuple[str, str, float]:
    """Run the probe task on a worker of `pool`; return (how it ended, the exception type if any, seconds).

    On wall time unless `lab_clock` names a factor: then the worker runs on the lab clock, as every lab's does.
    """
    with Rig(HERE, label="pools") as rig:
        queue = rig.queue()
        argv = [sys.executable, "-m", "celery", "-A", "pools_probe", "worker", "-P", pool, "-c", "2", "-Q", queue,
                "-n", unique_hostname(pool), "-l", "INFO", *FAST_FLAGS]
        # The probe app is plain Celery: no Django settings for it to load.
        rig.start_worker([queue], [], argv=argv, extra_env={"DJANGO_SETTINGS_MODULE": None, "BUDGETLAB_CLOCK": lab_clock},
                         log=tmp_path / f"{pool}.log")
        started = time.monotonic()
        result = rig.client.send_task("pools.nap", queue=queue)
        try:
            value = result.get(timeout=30, propagate=False)
        finally:
            seconds = time.monotonic() - started
    if isinstance(value, BaseException):
        return "raised", type(value).__name__, seconds
    return value, "", seconds


def test_prefork_applies_the_soft_limit(tmp_path):
    """On prefork, SoftTimeLimitExceeded reaches the task at its soft limit."""
    ended, _, seconds = run_probe("prefork", tmp_path)
    assert ended == "soft", f"prefork: the task ended {ended!r} after {seconds:.1f} s"


def test_threads_apply_no_limit(tmp_path):
    """On the threads pool the task runs to its end: neither limit applies."""
    ended, error, seconds = run_probe("threads", tmp_path)
    assert ended == "finished", f"threads: the task ended {ended!r} {error} after {seconds:.1f} s"


def test_solo_applies_no_limit(tmp_path):
    """On the solo pool the task runs to its end: neither limit applies."""
    ended, error, seconds = run_probe("solo", tmp_path)
    assert ended == "finished", f"solo: the task ended {ended!r} {error} after {seconds:.1f} s"


@_needs("gevent")
def test_gevent_applies_the_hard_limit_only(tmp_path):
    """On gevent no soft limit reaches the task; the hard limit ends it with TimeLimitExceeded."""
    ended, error, seconds = run_probe("gevent", tmp_path)
    assert (ended, error) == ("raised", "TimeLimitExceeded"), (
        f"gevent: the task ended {ended!r} {error} after {seconds:.1f} s")


@_needs("eventlet")
def test_eventlet_applies_no_limit(tmp_path):
    """On eventlet (0.41 with Celery 5.6.3) the task runs to its end: neither limit applies, although the pool has
    code for a hard limit."""
    ended, error, seconds = run_probe("eventlet", tmp_path)
    assert ended == "finished", f"eventlet: the task ended {ended!r} {error} after {seconds:.1f} s"


# The probe's limits are fractions of a second: a clock ten times faster than wall time still
# leaves the machine's own milliseconds well inside them.
LAB_CLOCK = "0.1"
EXPECTED = {"prefork": ("soft", ""), "threads": ("finished", ""), "solo": ("finished", ""),
            "gevent": ("raised", "TimeLimitExceeded"), "eventlet": ("finished", "")}


@pytest.mark.parametrize("pool", [pytest.param(name, marks=_needs(name) if name in ("gevent", "eventlet") else ())
                                  for name in EXPECTED])
def test_each_pool_applies_the_same_limits_on_the_lab_clock(pool, tmp_path):
    """On the lab clock, as in production, prefork applies the soft limit, gevent the hard one, threads, solo and
    eventlet none."""
    ended, error, seconds = run_probe(pool, tmp_path, lab_clock=LAB_CLOCK)
    assert (ended, error) == EXPECTED[pool], f"{pool} on the lab clock: the task ended {ended!r} {error} after {seconds:.1f} s"
