"""Logs budgetlab keeps under .budgetlab/logs, bounded: the head and tail of a stream, and one previous copy.

Lab code may print without limit (a 10 MB print in a loop); what a person
needs from a log is how it began and how it ended.
"""

from __future__ import annotations

import collections
import os
import threading
from pathlib import Path

HEAD_BYTES = 256 * 1024
TAIL_BYTES = 768 * 1024


def rotate(path: Path) -> None:
    """Keep the previous copy of a log as <name>.1, replacing an older one."""
    try:
        os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:  # no log yet, or a second check of the same lab rotated it a moment ago
        pass


class CappedLog:
    """Copy a stream into a file, keeping at most HEAD_BYTES of its start and TAIL_BYTES of its end."""

    def __init__(self, path: Path, head: int = HEAD_BYTES, tail: int = TAIL_BYTES):
        rotate(path)
        self.path, self._head, self._tail_cap = path, head, tail
        self._out = open(path, "wb")
        self._written = 0
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0
        self._cut = 0
        self._thread: threading.Thread | None = None

    def write(self, chunk: bytes) -> None:
        room = self._head - self._written
        if room > 0:
            self._out.write(chunk[:room])
            self._out.flush()
            self._written += min(room, len(chunk))
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        while self._tail_size - len(self._tail[0]) >= self._tail_cap:
            dropped = self._tail.popleft()
            self._tail_size -= len(dropped)
            self._cut += len(dropped)

    def drain(self, stream) -> None:
        """Copy a pipe in a thread of its own until it closes; finish with join()."""
        def copy():
            for chunk in iter(lambda: stream.read1(65536), b""):
                self.write(chunk)
        self._thread = threading.Thread(target=copy, daemon=True)
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def close(self) -> None:
        if self._cut:
            self._out.write(f"\n[… {self._cut} bytes cut here to keep this log small …]\n".encode())
        for chunk in self._tail:
            self._out.write(chunk)
        self._out.close()


def keep_tail(source: Path, destination: Path, lines: int = 200) -> Path | None:
    """Copy the last lines of a log (a worker's, say, from a folder about to be deleted); None if it is gone."""
    try:
        with open(source, "rb") as log:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - TAIL_BYTES))
            text = log.read().decode(errors="replace").splitlines()[-lines:]
    except OSError:
        return None
    rotate(destination)
    destination.write_text("\n".join(text) + "\n")
    return destination
