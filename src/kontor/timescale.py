"""Kontor's time scale: how many wall seconds one production second takes in this process.

Kontor's code and its stand-in services keep production numbers (a 600 s
soft limit, a 5.5 s model call). A development set-up may compress time by
setting KONTOR_TIME_SCALE (0.005 makes a 600 s budget last 3 wall seconds);
unset, or 1, is real time. The workshop sets it for every worker it starts.
"""

from __future__ import annotations

import os
import time


def factor() -> float:
    """Return the wall seconds one production second takes (0 < factor <= 1)."""
    raw = os.environ.get("KONTOR_TIME_SCALE", "")
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"KONTOR_TIME_SCALE={raw!r} is not a number; use e.g. 0.005, or 1 for real time") from None
    if not 0 < value <= 1:
        raise ValueError(f"KONTOR_TIME_SCALE={raw!r} must be above 0 and at most 1 (1 is real time)")
    return value


def to_wall(production_seconds: float | None) -> float | None:
    """Convert a production duration to wall seconds; None (no limit) stays None."""
    return None if production_seconds is None else production_seconds * factor()


def to_production(wall_seconds: float | None) -> float | None:
    """Convert a wall duration to production seconds; None stays None."""
    return None if wall_seconds is None else wall_seconds / factor()


def sleep(production_seconds: float) -> None:
    """Sleep for a production duration on this process's time scale."""
    time.sleep(production_seconds * factor())
