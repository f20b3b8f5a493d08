"""The learner's side of the room board: `join`, `leave`, and the result each `check` posts.

Standard library only and quick to import. Posting never changes what a
check prints or returns: it runs after the output, gives up after a couple
of seconds, and a board that cannot be reached is mentioned once, on stderr.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from budgetlab.board import payload
from budgetlab.errors import BudgetlabError
from budgetlab.paths import progress_dir
from budgetlab.targets import Target

# A room board is on the same LAN or machine and answers in milliseconds; anything
# slower is as good as unreachable, and the learner should not wait for it.
POST_TIMEOUT_SECONDS = 2.0
JOIN_TIMEOUT_SECONDS = 5.0


def joined_file() -> Path:
    return progress_dir() / "board.json"


def joined() -> dict | None:
    """Return the board this machine posts to, or None."""
    try:
        data = json.loads(joined_file().read_text())
        return data if isinstance(data, dict) and {"board", "token", "name", "learner"} <= set(data) else None
    except (OSError, ValueError):
        return None


def _save(data: dict) -> None:
    """Write the joined board readable by this user only: the token lets results into the room."""
    path = joined_file()
    tmp = path.with_name(f".board.{os.getpid()}.json")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=2)
    os.replace(tmp, path)


def parse_join_url(url: str) -> tuple[str, str]:
    """Return (board base URL, room token) from the join URL the facilitator shows."""
    parts = urlsplit(url.strip())
    segments = [s for s in parts.path.split("/") if s]
    if parts.scheme not in ("http", "https") or not parts.netloc or len(segments) != 2 or segments[0] != "join":
        raise BudgetlabError(f"{url!r} is not a board's join URL (http://HOST:PORT/join/TOKEN); "
                             "copy the whole join command your facilitator shows")
    return f"{parts.scheme}://{parts.netloc}", segments[1]


def _request(base: str, path: str, token: str, body: dict | None, timeout: float) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method="POST" if data else "GET",
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    # No proxy: a room board is on this machine or this LAN, and a proxy would see the token.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {}


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or exc
    return getattr(reason, "strerror", None) or str(reason) or type(reason).__name__


def join(url: str, name: str) -> str:
    """Check the board and its token, remember them, and return what to tell the learner."""
    base, token = parse_join_url(url)
    problem = payload.name_problem(name)
    if problem:
        raise BudgetlabError(problem)
    try:
        status, answer = _request(base, "/api/room", token, None, JOIN_TIMEOUT_SECONDS)
    except (OSError, ValueError) as exc:
        raise BudgetlabError(f"could not reach the board at {base} ({_reason(exc)}); is it running, "
                             "and is this machine on the facilitator's network?") from None
    if status != 200:
        raise BudgetlabError(f"the board at {base} refused to join: {answer.get('error', f'HTTP {status}')}")
    if not answer.get("open"):
        raise BudgetlabError(f"the room at {base} is closed")
    previous = joined() or {}
    # The same board again (a rename, say) keeps the same row on the board.
    learner = previous["learner"] if (previous.get("board"), previous.get("token")) == (base, token) \
        else uuid.uuid4().hex
    _save({"board": base, "token": token, "name": name.strip(), "learner": learner})
    return (f"joined the room board at {base} as {name.strip()}; every 'budgetlab check N' now also posts "
            "which checks pass and their symptoms (never your code); 'budgetlab leave' stops it")


def leave() -> str:
    board = joined()
    joined_file().unlink(missing_ok=True)
    return f"left the room board at {board['board']}; checks stay on this machine" if board \
        else "not joined to a room board; nothing to do"


def post_check(lab: int, outcome, target: Target, warn) -> None:
    """Post one check's result to the joined board, if any; never raises, never waits long."""
    try:
        board = joined()
        # The reference solution's result says nothing about the learner.
        if board is None or not target.is_learners:
            return
        _post(board, lab, outcome, warn)
    except Exception as exc:  # noqa: BLE001 - the board must never break a check
        warn(f"the room board was not told about this check ({type(exc).__name__})")


def _post(board: dict, lab: int, outcome, warn) -> None:
    from budgetlab.commands import progress

    entry = progress.lab_entry(progress.load(), lab)
    minutes = max(0.0, (time.time() - entry.get("first_seen", time.time())) / 60)
    body = payload.of_outcome(lab, outcome, entry["hints_used"], minutes, board["learner"], board["name"])
    answer: dict = {}

    def send():
        try:
            answer["status"], answer["body"] = _request(board["board"], "/api/results", board["token"], body,
                                                        POST_TIMEOUT_SECONDS)
        except Exception as exc:  # noqa: BLE001 - reported below as "could not be reached"
            answer["error"] = _reason(exc)

    # A thread bounds the whole exchange, DNS and connect included, not only each socket call.
    sender = threading.Thread(target=send, name="room-board-post", daemon=True)
    sender.start()
    sender.join(POST_TIMEOUT_SECONDS + 0.5)
    if answer.get("status") in (200, 201):
        if board.get("unreachable"):
            _save({k: v for k, v in board.items() if k != "unreachable"})
        return
    if "status" in answer:
        problem = f"refused this result: {answer['body'].get('error', 'HTTP ' + str(answer['status']))}"
    else:
        problem = f"could not be reached ({answer.get('error', 'no answer in time')})"
    # Said once per outage, not after every check; the next check tries again quietly.
    if not board.get("unreachable"):
        warn(f"the room board at {board['board']} {problem}; your check is unchanged and stays on this "
             "machine ('budgetlab leave' stops posting)")
        _save({**board, "unreachable": True})
