"""Kontor's own view of the lab clock: how many wall seconds one production second takes.

KONTOR_TIME_SCALE sets the factor (1, the default, is real time); the
workshop's environment sets it for every worker it starts. Kontor code
keeps production numbers and converts only where it waits.
"""

from __future__ import annotations

import os
import time


def factor() -> float:
    """Return the wall seconds one production second takes (0 < factor <= 1)."""
    raw = os.environ.get("KONTOR_TIME_SCALE") or os.environ.get("BUDGETLAB_CLOCK") or "1"
    try:
        value = float(raw)
    except ValueError:
        return 1.0
    return value if 0 < value <= 1 else 1.0


def to_wall(production_seconds: float | None) -> float | None:
    """Convert a production duration to wall seconds; None (no limit) stays None."""
    return None if production_seconds is None else production_seconds * factor()


def to_production(wall_seconds: float | None) -> float | None:
    """Convert a wall duration to production seconds; None stays None."""
    return None if wall_seconds is None else wall_seconds / factor()


def sleep(production_seconds: float) -> None:
    """Sleep for a production duration on the lab clock."""
    time.sleep(production_seconds * factor())
