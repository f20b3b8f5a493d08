"""Start detached server processes, find free ports, and stop processes by PID."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Tell whether 127.0.0.1:port can be bound."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def pid_alive(pid: int | None) -> bool:
    """Tell whether a process with this PID exists and is not a zombie."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pid_cmdline(pid: int) -> str:
    """Return the command line of a process, or '' if it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    """Return every PID /proc lists right now."""
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def running_from(folder: Path) -> list[int]:
    """Return the PIDs of live processes whose program lies under folder (read from /proc)."""
    prefix = str(folder).rstrip("/") + "/"
    return [pid for pid in _pids() if pid_cmdline(pid).startswith(prefix) and pid_alive(pid)]


def parent_pid(pid: int) -> int | None:
    """Return a process's parent PID from /proc, or None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    """Return when a process started, in clock ticks since boot (with the PID, it names one process)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def descendants(root: int) -> set[int]:
    """Return the PIDs below root, read from /proc."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        parent = parent_pid(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def spawn(argv: list[str], log: Path, env: dict[str, str] | None = None,
          preexec: Callable[[], None] | None = None) -> subprocess.Popen:
    """Start a server in its own session so that Ctrl-C in a terminal does not reach it."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=env, start_new_session=True, preexec_fn=preexec, close_fds=True,
        )


def wait_until(ready: Callable[[], bool], timeout: float, alive: Callable[[], bool]) -> bool:
    """Poll a readiness state until it holds; give up early when the process died."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while time.monotonic() < deadline:
        if ready():
            return True
        if not alive():
            return False
        time.sleep(delay)
        delay = min(delay * 1.5, 0.1)
    return ready()


def stop_pid(pid: int, sig: int = signal.SIGTERM, grace: float = 10.0) -> None:
    """Send a signal, wait for the process to go, and SIGKILL it after the grace period."""
    if not pid_alive(pid):
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return
        time.sleep(0.02)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while pid_alive(pid):
        _reap(pid)
        time.sleep(0.02)


def end_child(proc: subprocess.Popen, sig: int = signal.SIGTERM, grace: float = 2.0) -> int | None:
    """Ask a child process to leave with `sig`, SIGKILL it after `grace` seconds; return its exit code."""
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(sig)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode


def _reap(pid: int) -> None:
    # A server started by this very process must be reaped, or it stays a zombie.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
