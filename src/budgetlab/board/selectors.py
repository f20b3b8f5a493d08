"""The room board's reads: the labs it knows, a room by its token or key, and what the page and exports show."""

from __future__ import annotations

import functools
import hmac
import time

from budgetlab.board import standing
from budgetlab.board.models import Learner, Room, Standing


@functools.lru_cache(maxsize=1)
def room_labs() -> tuple[tuple[int, str], ...]:
    """Return (number, title) of every lab of the facilitator's checkout, read once."""
    from budgetlab import labs

    return tuple((lab.number, lab.title) for lab in labs.load())


def room_current() -> Room | None:
    """Return the room this server serves: the newest, open or closed."""
    return Room.objects.order_by("-id").first()


def room_by_secret(field: str, value: str) -> Room | None:
    """Return the current room when value is its token or key (compared in constant time), else None."""
    room = room_current()
    if room is None or not value:
        return None
    return room if hmac.compare_digest(getattr(room, field).encode(), value.encode()) else None


def _room_data(room: Room) -> tuple[list[dict], dict]:
    learners = list(Learner.objects.filter(room=room).values("learner", "name", "last_lab"))
    standings = {(row.learner, row.lab): row.state for row in Standing.objects.filter(room=room)}
    return learners, standings


def board_state(room: Room, stuck_minutes: float, now: float | None = None) -> dict:
    """Return what the board page shows, with the room's own status."""
    learners, standings = _room_data(room)
    state = standing.board(list(room_labs()), learners, standings, time.time() if now is None else now,
                           stuck_minutes)
    state["closed"] = room.closed_at is not None
    return state


def report_rows(room: Room) -> list[dict]:
    """Return the room as `budgetlab report --merge` rows."""
    learners, standings = _room_data(room)
    return standing.report_rows(list(room_labs()), learners, standings)
