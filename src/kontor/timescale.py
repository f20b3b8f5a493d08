"""Kontor's view of the lab clock: how many wall seconds one production second takes.

KONTOR_TIME_SCALE sets the factor (1, real time, when unset); the
workshop's workers also carry it as BUDGETLAB_CLOCK, read as a fallback.
"""

from __future__ import annotations

import os
import time


def factor() -> float:
    """Return the wall seconds one production second takes."""
    raw = os.environ.get("KONTOR_TIME_SCALE") or os.environ.get("BUDGETLAB_CLOCK") or "1"
    return float(raw)


def to_wall(production_seconds: float | None) -> float | None:
    """Convert a production duration to wall seconds; None stays None."""
    return None if production_seconds is None else production_seconds * factor()


def to_production(wall_seconds: float | None) -> float | None:
    """Convert a wall duration to production seconds; None stays None."""
    return None if wall_seconds is None else wall_seconds / factor()


def sleep(production_seconds: float) -> None:
    """Sleep for a production duration on the lab clock."""
    time.sleep(production_seconds * factor())
