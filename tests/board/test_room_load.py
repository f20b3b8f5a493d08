"""A full room on loopback: 100 learners working through 5 labs, each posting a check every few seconds; nothing is lost."""

import collections
import json
import urllib.request

import pytest

from budgetlab.board.rig import simulate_room

pytestmark = pytest.mark.slow

LEARNERS, LABS = 100, 5
# The benchmark (benchmarks/board_load.py) runs a full minute and prints latency; the suite needs only the proof.
SECONDS = 25


def test_a_room_of_a_hundred_posting_for_half_a_minute_loses_nothing(board):
    """Every post is accepted and stored exactly once, and the export counts each as one attempt."""
    load = simulate_room(board.base, board.token, learners=LEARNERS, labs=LABS, seconds=SECONDS)
    assert len(load.sent) >= LEARNERS * SECONDS / 4 * 0.8, f"the simulated room sent only {len(load.sent)} posts"
    assert not load.errors, f"{len(load.errors)} posts were not accepted, e.g. {load.errors[:3]}"
    stored = board.stored_post_ids()
    duplicates = [post_id for post_id, count in collections.Counter(stored).items() if count > 1]
    assert not duplicates, f"{len(duplicates)} posts were stored twice"
    assert set(stored) == {post_id for post_id, _, _ in load.sent}, "posts were lost between answer and storage"
    request = urllib.request.Request(board.base + "/export.json", headers={"X-Board-Key": board.key})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as response:
        rows = json.loads(response.read())["rows"]
    assert sum(row["attempts"] for row in rows) == len(load.sent), "the export's attempts do not add up to the posts"
    assert len({row["learner"] for row in rows}) == LEARNERS
