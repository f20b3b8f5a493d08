"""The lab clock as the workshop's own code sees it: the factor, the shared anchor, and conversions.

Lab code keeps production numbers and production idioms (a 600 s soft
limit, `time.monotonic() + 40`, a Redis key that lives 7,200 s). Every
process the workshop starts for a lab runs on production time compressed
by one factor (budgetlab.inworker.labtime, installed at start-up through
the `boot` folder's sitecustomize); BUDGETLAB_CLOCK=1 runs in real time.
The workshop's own processes (the CLI, the graders) stay on wall time and
convert with the functions here: durations with to_wall/to_production,
timestamps that lab processes wrote with production_time/wall_time.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import time
from collections.abc import Iterator
from pathlib import Path

from budgetlab.errors import BudgetlabError

# 200x faster than production: a 600 s soft limit fires after 3 wall seconds.
DEFAULT_FACTOR = 0.005
# Where production time equals wall time, for every process of one session; set once, inherited.
ANCHOR_VARIABLE = "BUDGETLAB_CLOCK_ANCHOR"
# The folder whose sitecustomize puts a process on the lab clock.
BOOT_DIR = Path(__file__).resolve().parent / "boot"


def factor() -> float:
    """Return the wall seconds one production second takes (0 < factor <= 1)."""
    return read("BUDGETLAB_CLOCK", DEFAULT_FACTOR)


def at_most_as_fast_as(slowest: float) -> float:
    """Return the factor in force, but never a faster clock than `slowest` (a slower one, real time included, wins)."""
    return max(factor(), slowest)


def read(variable: str, default: float) -> float:
    """Return the factor an environment variable sets, or `default` when it is unset; a bad value is a BudgetlabError."""
    raw = os.environ.get(variable, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise BudgetlabError(f"{variable}={raw!r} is not a number; use e.g. 0.005, or 1 for real time") from None
    if not 0 < value <= 1:
        raise BudgetlabError(f"{variable}={raw!r} must be above 0 and at most 1 (1 is real time)")
    return value


def anchor() -> float:
    """Return the wall instant where production time equals wall time, fixing it on first use."""
    raw = os.environ.get(ANCHOR_VARIABLE)
    if raw:
        try:
            return float(raw)
        except ValueError:
            raise BudgetlabError(f"{ANCHOR_VARIABLE}={raw!r} is not a wall timestamp") from None
    value = time.time()
    # In the environment, so that every process this one starts (a check's pytest, its workers) shares it.
    os.environ[ANCHOR_VARIABLE] = repr(value)
    return value


def to_wall(production_seconds: float | None, at: float | None = None) -> float | None:
    """Convert a production duration to wall seconds; None (no limit) stays None."""
    if production_seconds is None:
        return None
    return production_seconds * (factor() if at is None else at)


def to_production(wall_seconds: float | None, at: float | None = None) -> float | None:
    """Convert a wall duration to production seconds; None stays None."""
    if wall_seconds is None:
        return None
    return wall_seconds / (factor() if at is None else at)


def production_time(wall_timestamp: float | None, at: float | None = None) -> float | None:
    """Return the production timestamp that lab processes read at a wall instant (None stays None)."""
    if wall_timestamp is None:
        return None
    start = anchor()
    return start + (wall_timestamp - start) / (factor() if at is None else at)


def wall_time(production_timestamp: float | None, at: float | None = None) -> float | None:
    """Return the wall instant at which lab processes read a production timestamp (None stays None)."""
    if production_timestamp is None:
        return None
    start = anchor()
    return start + (production_timestamp - start) * (factor() if at is None else at)


def production_now(at: float | None = None) -> float:
    """Return the production timestamp lab processes read now."""
    return production_time(time.time(), at)


def production_datetime() -> datetime.datetime:
    """Return production time now as an aware datetime, as `django.utils.timezone.now()` reads it in a lab process."""
    return datetime.datetime.fromtimestamp(production_now(), datetime.timezone.utc)


@contextlib.contextmanager
def running_at(value: float, unless_chosen: bool = False) -> Iterator[float]:
    """Put this process, and every process it starts, on a lab clock of `value` for the block.

    With `unless_chosen`, a BUDGETLAB_CLOCK the person set wins. Yields the
    factor in force; the environment is as it was afterwards.
    """
    saved = os.environ.get("BUDGETLAB_CLOCK")
    if not (unless_chosen and saved):
        os.environ["BUDGETLAB_CLOCK"] = repr(value)
    try:
        yield factor()
    finally:
        if saved is None:
            os.environ.pop("BUDGETLAB_CLOCK", None)
        else:
            os.environ["BUDGETLAB_CLOCK"] = saved


def describe() -> str:
    """Say which clock is in force, for any output that shows a time."""
    f = factor()
    if f == 1:
        return "lab clock: real time"
    return f"lab clock: 1 production second = {f * 1000:g} ms wall ({1 / f:g}x faster)"
