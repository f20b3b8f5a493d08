"""The lab clock: one factor that turns production seconds into wall seconds.

Lab code keeps production numbers as written (a 600 s soft limit, a 5.5 s
model call). Only the stack compresses time: the fake clients sleep for
latency x factor and the lab-clock pool scales time limits by the same
factor. BUDGETLAB_CLOCK=1 runs in real time.
"""

from __future__ import annotations

import time

from budgetlab.errors import BudgetlabError
from kontor import timescale

# 200x faster than production: a 600 s soft limit fires after 3 wall seconds.
DEFAULT_FACTOR = 0.005


def factor() -> float:
    """Return the wall seconds one production second takes (0 < factor <= 1)."""
    try:
        # Read like Kontor reads its own time scale; the workshop passes this one on to it.
        return timescale.read("BUDGETLAB_CLOCK", DEFAULT_FACTOR)
    except ValueError as exc:
        raise BudgetlabError(str(exc)) from None


def to_wall(production_seconds: float | None) -> float | None:
    """Convert a production duration to wall seconds; None (no limit) stays None."""
    if production_seconds is None:
        return None
    return production_seconds * factor()


def to_production(wall_seconds: float | None) -> float | None:
    """Convert a wall duration to production seconds; None stays None."""
    if wall_seconds is None:
        return None
    return wall_seconds / factor()


def sleep(production_seconds: float) -> None:
    """Sleep for a production duration on the lab clock."""
    time.sleep(production_seconds * factor())


def describe() -> str:
    """Say which clock is in force, for any output that shows a time."""
    f = factor()
    if f == 1:
        return "lab clock: real time"
    return f"lab clock: 1 production second = {f * 1000:g} ms wall ({1 / f:g}x faster)"
