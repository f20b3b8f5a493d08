"""`check` on a machine that joined a room board: it posts sentences and symptoms, and an unreachable board changes nothing."""

import json
import sqlite3

from budgetlab.board.rig import RoomBoard


def board_state(board: RoomBoard) -> dict:
    import urllib.request

    request = urllib.request.Request(f"{board.base}/api/state", headers={"X-Board-Key": board.key})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as response:
        return json.loads(response.read())


def test_check_posts_which_checks_pass_by_their_sentence_and_nothing_else(cli, tmp_path):
    """After join, check 1 shows on the board as failing 1/2 with the symptom; the stored post holds no path or code."""
    with RoomBoard(tmp_path / "facilitator") as board:
        assert cli("join", board.join_url, "--as", "Ada").returncode == 0
        cli("hint", "1")
        result = cli("check", "1")
        assert result.returncode == 1 and "room board" not in result.stderr, result.stderr
        state = board_state(board)
        with sqlite3.connect(board.database()) as db:
            (body,) = db.execute("SELECT body FROM board_post").fetchone()
    (ada,) = state["learners"]
    assert ada["name"] == "Ada" and ada["cells"][0]["label"] == "failing 1/2", ada
    assert ada["cells"][0]["hints_used"] == 1
    assert state["labs"][0]["blockers"][0]["text"] == "1 of 1 fail: The tally of a mixed list includes its negative numbers."
    assert "came back 8" in body
    for leak in (str(cli.root), "test_tally", "tests/", "def ", "tally.py", "sum("):
        assert leak not in body, f"{leak!r} left the learner's machine"


def test_an_unreachable_board_leaves_check_unchanged_and_is_mentioned_once(cli, tmp_path):
    """With the board gone, check prints the same, exits the same, and says once on stderr that the board was not reached."""
    alone = cli("check", "1")
    with RoomBoard(tmp_path / "facilitator") as board:
        assert cli("join", board.join_url, "--as", "Ada").returncode == 0
    first = cli("check", "1")
    assert (first.returncode, first.stdout) == (alone.returncode, alone.stdout)
    mentions = [line for line in first.stderr.splitlines() if "room board" in line]
    assert len(mentions) == 1 and "could not be reached" in mentions[0], first.stderr
    second = cli("check", "1")
    assert (second.returncode, second.stdout) == (alone.returncode, alone.stdout)
    assert "room board" not in second.stderr, "the board being away must be said once, not after every check"
    assert cli("leave").returncode == 0
