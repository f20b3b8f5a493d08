"""The room board's writes: open and close a room, and take in one learner's result."""

from __future__ import annotations

import secrets
import threading
import time

from django.db import transaction
from django.utils import timezone

from budgetlab.board import standing
from budgetlab.board.models import Learner, Post, Room, Standing


class Refused(Exception):
    """A post the board turns away; status is the HTTP status the learner's machine gets."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# One learner checks every few seconds at most, even with `watch`; ten at once,
# then one every two seconds, lets every honest machine through and stops a loop.
BURST = 10
SECONDS_PER_POST = 2.0

# The server is one process with a thread per request; one lock keeps SQLite's
# single writer from ever answering "database is locked" under a full room.
_WRITE_LOCK = threading.Lock()
_buckets: dict[tuple[int, str], tuple[float, float]] = {}


def room_open(fresh: bool = False) -> Room:
    """Return the room still open from an earlier run, or open a new one (always, with fresh)."""
    with _WRITE_LOCK, transaction.atomic():
        current = Room.objects.filter(closed_at__isnull=True).order_by("-id").first()
        if current and not fresh:
            return current
        Room.objects.filter(closed_at__isnull=True).update(closed_at=timezone.now())
        return Room.objects.create(token=secrets.token_urlsafe(9), key=secrets.token_urlsafe(12))


def room_close(room: Room) -> None:
    """Close the room: the page and its exports stay, new results are refused."""
    with _WRITE_LOCK:
        Room.objects.filter(pk=room.pk, closed_at__isnull=True).update(closed_at=timezone.now())
        _closed.add(room.pk)


# Rooms closed while this server runs: a post that was already on its way when the room closed is refused too.
_closed: set[int] = set()


def _rate_allows(room_id: int, learner: str, now: float) -> bool:
    tokens, last = _buckets.get((room_id, learner), (BURST, now))
    tokens = min(BURST, tokens + (now - last) / SECONDS_PER_POST)
    if tokens < 1:
        _buckets[(room_id, learner)] = (tokens, now)
        return False
    _buckets[(room_id, learner)] = (tokens - 1, now)
    return True


def post_record(room: Room, post: dict, received_at: float | None = None) -> bool:
    """Store one validated result and fold it into the learner's standing; False when it was stored before.

    room is as loaded for this request; received_at is now unless given
    (scripts/board_screenshot.py replays an afternoon's results).
    """
    if room.closed_at is not None:
        raise Refused(410, "this room is closed; results are no longer collected")
    with _WRITE_LOCK:
        if room.pk in _closed:
            raise Refused(410, "this room is closed; results are no longer collected")
        now = time.time() if received_at is None else received_at
        # Counted before the duplicate check, so a machine that resends in a loop is slowed as well.
        if received_at is None and not _rate_allows(room.pk, post["learner"], now):
            raise Refused(429, "too many results from this learner; wait a few seconds")
        with transaction.atomic():
            if Post.objects.filter(post_id=post["post_id"]).exists():
                return False
            # Five statements and one commit in the common case: cheap when a whole room checks at once.
            Post.objects.create(room=room, post_id=post["post_id"], learner=post["learner"], lab=post["lab"],
                                received_at=now, body=post)
            if not Learner.objects.filter(room=room, learner=post["learner"]).update(name=post["name"],
                                                                                    last_lab=post["lab"]):
                Learner.objects.create(room=room, learner=post["learner"], name=post["name"], last_lab=post["lab"])
            row = Standing.objects.filter(room=room, learner=post["learner"], lab=post["lab"]).first()
            state = standing.fold(row.state if row else None, post, now)
            if row:
                Standing.objects.filter(pk=row.pk).update(state=state)
            else:
                Standing.objects.create(room=room, learner=post["learner"], lab=post["lab"], state=state)
        return True
