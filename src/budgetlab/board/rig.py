"""A real room board in a subprocess and a room of simulated learners, for the tests, the benchmark and the screenshot.

RoomBoard runs `budgetlab facilitate` exactly as a facilitator types it,
reads the links it prints, and stops it with Ctrl-C by PID. simulate_room
posts results the way `check` does, from many learners at once.
"""

from __future__ import annotations

import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.board import client, payload
from budgetlab.stack import process


class RoomBoard:
    """`budgetlab facilitate --port 0` with its own state folder, started and stopped by PID."""

    def __init__(self, state_dir: Path, *args: str, start_timeout: float = 120.0):
        self.state_dir = Path(state_dir)
        self.args = args
        self.start_timeout = start_timeout
        self.lines: list[str] = []
        self._lines: queue.Queue = queue.Queue()
        self.proc: subprocess.Popen | None = None
        self.key = self.join_url = self.base = self.token = self.page_url = ""

    def __enter__(self) -> "RoomBoard":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        env = dict(os.environ, BUDGETLAB_STATE_DIR=str(self.state_dir), COLUMNS="250", NO_COLOR="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "budgetlab.cli_entry", "facilitate", "--port", "0",
                                      *self.args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True, name="room-board-output").start()
        deadline = time.monotonic() + self.start_timeout
        while not self.join_url:
            try:
                line = self._lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError("budgetlab facilitate printed no join command:\n" + "\n".join(self.lines))
            if line is None:
                raise RuntimeError("budgetlab facilitate ended early:\n" + "\n".join(self.lines))
            if "?key=" in line:
                self.key = line.rsplit("?key=", 1)[1].strip()
                self.page_url = line.split(": ", 1)[1].strip()
            if line.strip().startswith("budgetlab join "):
                self.join_url = line.split()[2]
                self.base, self.token = client.parse_join_url(self.join_url)

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            self._lines.put(line)
        self._lines.put(None)

    def stop(self) -> int | None:
        """Press Ctrl-C on the board and return its exit code (killed by PID if it does not stop)."""
        return None if self.proc is None else process.end_child(self.proc, signal.SIGINT, grace=30)

    def output(self) -> str:
        return "\n".join(self.lines)

    def database(self) -> Path:
        return self.state_dir / "board" / "board.sqlite3"

    def stored_post_ids(self) -> list[str]:
        """Every post id the board stored, read from its SQLite file as it is on disk."""
        with sqlite3.connect(f"file:{self.database()}?mode=ro", uri=True) as db:
            return [row[0] for row in db.execute("SELECT post_id FROM board_post")]


def check_result(learner: str, name: str, lab: int, passed: int, total: int, hints: int = 0,
                 minutes: float = 1.0, sentences: list[str] | None = None) -> dict:
    """Return a result as `check` would post it: the first `passed` of `total` checks pass."""
    sentences = sentences or [f"Check {i + 1} of lab {lab} holds." for i in range(total)]
    results = [{"title": sentence, "outcome": "passed" if i < passed else "failed",
                "symptom": "" if i < passed else f"symptom of check {i + 1}"} for i, sentence in enumerate(sentences)]
    return payload.build(lab, results, None, 0 if passed == total else 1, hints, minutes, learner, name)


def post(base: str, token: str, body: dict, timeout: float = 10.0) -> tuple[int, dict]:
    """Send one result as the learner's machine does; return the status and the board's answer."""
    return client._request(base, "/api/results", token, body, timeout)


@dataclass
class RoomLoad:
    """What a simulated room sent and how long each post took."""

    sent: list[tuple[str, int, float]] = field(default_factory=list)  # post id, status, seconds
    errors: list[str] = field(default_factory=list)

    def stored(self) -> list[str]:
        return [post_id for post_id, status, _ in self.sent if status == 201]

    def latency_p95(self) -> float:
        times = sorted(seconds for _, _, seconds in self.sent)
        return times[max(0, int(len(times) * 0.95) - 1)] if times else float("nan")


def simulate_room(base: str, token: str, learners: int = 100, labs: int = 5, seconds: float = 60.0,
                  every: tuple[float, float] = (2.0, 4.0), seed: int = 20) -> RoomLoad:
    """Let `learners` work through `labs` labs, each posting a check every few seconds, for `seconds`."""
    load = RoomLoad()
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def learner(index: int) -> None:
        rng = random.Random(seed * 1000 + index)
        learner_id = f"{index:032x}"
        # Spread over every lab from the start, so each lab's row and ranking is under load.
        lab, attempt = index % labs + 1, 0
        time.sleep(rng.uniform(0, every[1]))  # a room does not press Enter in the same millisecond
        while time.monotonic() < deadline:
            attempt += 1
            total = 4
            passed = min(total, attempt - 1 + rng.randint(0, 1))
            body = check_result(learner_id, f"learner {index:03d}", lab, passed, total, attempt // 3, attempt)
            started = time.monotonic()
            try:
                status, answer = post(base, token, body)
            except Exception as exc:  # noqa: BLE001 - counted as lost, with the reason
                status, answer = 0, {"error": repr(exc)}
            elapsed = time.monotonic() - started
            with lock:
                load.sent.append((body["post_id"], status, elapsed))
                if status != 201:
                    load.errors.append(f"learner {index}: {status} {answer.get('error', '')}")
            if passed == total:
                lab, attempt = lab % labs + 1, 0
            time.sleep(rng.uniform(*every))

    threads = [threading.Thread(target=learner, args=(i,), daemon=True) for i in range(learners)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return load
