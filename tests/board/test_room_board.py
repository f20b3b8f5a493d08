"""The room board over HTTP as a facilitator runs it: tokens, limits, a closed room, exports, Ctrl-C."""

import http.client
import json
import socket
import time
import urllib.request

import pytest

from budgetlab import labs
from budgetlab.board import payload
from budgetlab.board.rig import RoomBoard, check_result, post
from budgetlab.commands import reporting

ADA = "a" * 32


def get(board, path, key=None):
    """GET a board URL with the facilitator's key (or none); return status and body."""
    request = urllib.request.Request(board.base + path, headers={"X-Board-Key": key} if key else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_facilitate_serves_this_machine_only_by_default_and_prints_the_join_command(board):
    """Without --host the board listens on 127.0.0.1, says so, and prints a join command with a room token."""
    assert "this machine only" in board.output() and "--host 0.0.0.0" in board.output()
    assert board.join_url.startswith("http://127.0.0.1:") and "/join/" in board.join_url
    assert f"budgetlab join {board.join_url} --as YOUR-NAME" in board.output()


def test_serving_on_the_lan_is_said_when_it_starts(tmp_path):
    """--host 0.0.0.0 serves the room on the LAN and the first line says so."""
    with RoomBoard(tmp_path / "lan", "--host", "0.0.0.0") as lan:
        assert lan.lines[0].startswith("serving the room on the LAN"), lan.output()
        status, _ = post(lan.base, lan.token, check_result(ADA, "Ada", 1, 1, 2))
        assert status == 201, "a learner must reach a LAN board through the printed join URL"


def test_results_need_the_room_token(board):
    """A post with no token, a wrong one or the facilitator's key is refused, and nothing is stored."""
    for token in ("", "not-the-token", board.key):
        status, answer = post(board.base, token, check_result(ADA, "Ada", 1, 1, 2))
        assert status == 401, f"a post with token {token!r} got {status}"
    assert board.stored_post_ids() == []


def test_the_board_and_its_exports_need_the_facilitators_key(board):
    """The page, its state and the exports answer 403 without the key, and the room token is not the key."""
    for path in ("/", "/api/state", "/export.csv", "/export.json"):
        assert get(board, path)[0] == 403, f"{path} answered without the facilitator's key"
        assert get(board, path, key=board.token)[0] == 403, f"{path} answered to the room token"
        assert get(board, path, key=board.key)[0] == 200, f"{path} refused the facilitator's key"


def test_a_body_over_the_limit_is_refused_before_it_is_read(board):
    """A post larger than the body limit is answered 413."""
    body = json.dumps({**check_result(ADA, "Ada", 1, 1, 2), "padding": "x" * payload.MAX_BODY_BYTES}).encode()
    connection = http.client.HTTPConnection(board.base.removeprefix("http://"), timeout=10)
    connection.request("POST", "/api/results", body, {"Authorization": f"Bearer {board.token}",
                                                      "Content-Type": "application/json"})
    assert connection.getresponse().status == 413
    connection.close()


def test_a_malformed_result_is_refused_with_its_reason(board):
    """A result for a lab the board does not have, or with a bad name, is answered 400 with the reason."""
    missing = max(lab.number for lab in labs.load()) + 1
    status, answer = post(board.base, board.token, check_result(ADA, "Ada", missing, 1, 2))
    assert (status, answer["error"]) == (400, f"this board has no lab {missing}")
    status, answer = post(board.base, board.token, check_result(ADA, "@cmd", 1, 1, 2))
    assert status == 400 and "cannot start with" in answer["error"]


def test_one_learner_flooding_the_board_is_slowed_and_others_are_not(board):
    """Posts from one learner beyond the burst get 429; another learner's post still gets in."""
    started = time.monotonic()
    statuses = [post(board.base, board.token, check_result(ADA, "Ada", 1, 1, 2))[0] for _ in range(40)]
    elapsed = time.monotonic() - started
    accepted = statuses.count(201)
    assert 429 in statuses, f"40 posts in {elapsed:.1f} s were all accepted"
    # The bucket holds 10 and refills one every 2 s: more than that means no limit.
    assert accepted <= 10 + elapsed / 2 + 1, f"{accepted} of 40 accepted in {elapsed:.1f} s"
    assert post(board.base, board.token, check_result("b" * 32, "Bo", 1, 1, 2))[0] == 201
    assert len(board.stored_post_ids()) == accepted + 1


def test_a_post_sent_twice_is_stored_once(board):
    """The same result posted again (a retry) is answered 200 and not stored a second time."""
    result = check_result(ADA, "Ada", 1, 1, 2)
    assert post(board.base, board.token, result)[0] == 201
    assert post(board.base, board.token, result)[0] == 200
    assert board.stored_post_ids() == [result["post_id"]]


def test_a_closed_room_refuses_results_but_keeps_its_board(board):
    """After the facilitator closes the room, posts get 410 and the board still shows what came before."""
    assert post(board.base, board.token, check_result(ADA, "Ada", 1, 1, 2))[0] == 201
    request = urllib.request.Request(board.base + "/api/close", data=b"", method="POST",
                                     headers={"X-Board-Key": board.key})
    urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10).close()
    status, answer = post(board.base, board.token, check_result(ADA, "Ada", 1, 2, 2))
    assert (status, answer["error"]) == (410, "this room is closed; results are no longer collected")
    state = json.loads(get(board, "/api/state", board.key)[1])
    assert state["closed"] and state["learners"][0]["cells"][0]["label"] == "failing 1/2"


def test_exports_are_what_budgetlab_report_merges(board, tmp_path, learner_cli):
    """The JSON export merges with `budgetlab report --merge`, and the CSV has the report's columns."""
    post(board.base, board.token, check_result(ADA, "Ada", 1, 2, 2, hints=1, minutes=9.0))
    exported = tmp_path / "room.json"
    exported.write_text(get(board, "/export.json", board.key)[1])
    merged = learner_cli("report", "--merge", str(exported), "--format", "csv")
    assert merged.returncode == 0, merged.stderr
    csv_export = get(board, "/export.csv", board.key)[1]
    assert csv_export.strip() == merged.stdout.strip(), "the CSV export must equal the merged report"
    assert csv_export.splitlines()[0] == ",".join(reporting.COLUMNS)
    assert "Ada,1,The limit nobody chose,passed,1,1,9.0" in csv_export


def test_ctrl_c_stops_the_board_and_facilitate_resumes_the_same_room(tmp_path):
    """Ctrl-C ends facilitate with exit 0 and a closed port; started again it serves the same room and results."""
    first = RoomBoard(tmp_path / "facilitator")
    first.start()
    assert post(first.base, first.token, check_result(ADA, "Ada", 1, 1, 2))[0] == 201
    assert first.stop() == 0 and "board stopped" in first.output()
    host, port = first.base.removeprefix("http://").split(":")
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=2).close()
    with RoomBoard(tmp_path / "facilitator") as again:
        assert again.token == first.token, "a restarted board must keep the join command learners already ran"
        assert len(again.stored_post_ids()) == 1
    with RoomBoard(tmp_path / "facilitator", "--new") as fresh:
        assert fresh.token != first.token
        assert post(fresh.base, first.token, check_result(ADA, "Ada", 1, 1, 2))[0] == 401


def test_join_stores_the_board_readable_only_by_the_learner_and_leave_forgets_it(board, learner_cli):
    """join checks the token and saves board and token with mode 0600; leave removes them."""
    joined = learner_cli("join", board.join_url, "--as", "Ada")
    assert joined.returncode == 0, joined.stderr
    saved = learner_cli.state / "board.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert json.loads(saved.read_text())["token"] == board.token
    left = learner_cli("leave")
    assert left.returncode == 0 and "left the room board" in left.stdout and not saved.exists()


@pytest.mark.parametrize("how, expected", [
    ("wrong token", "refused to join: this room token is not the board's"),
    ("not a join URL", "is not a board's join URL"),
    ("nobody listening", "could not reach the board"),
])
def test_join_problems_are_one_line_and_exit_2(board, learner_cli, how, expected):
    """A wrong token, a wrong URL or no board: one line on stderr, exit 2, nothing saved."""
    url = {"wrong token": board.base + "/join/nottheroomtoken", "not a join URL": board.base + "/",
           "nobody listening": "http://127.0.0.1:9/join/abc"}[how]
    result = learner_cli("join", url, "--as", "Ada")
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (learner_cli.state / "board.json").exists()
