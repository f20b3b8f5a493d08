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


# Linux answers every question about a process from /proc, cheaply; elsewhere (macOS) `ps` answers them.
PROC = Path("/proc")


def _has_proc() -> bool:
    return (PROC / "self" / "stat").exists()


def _ps(pid: int | None, fields: str) -> list[str]:
    """Return `ps`'s lines for one process (or every process when pid is None), without its header."""
    argv = ["ps", "-o", fields, *(["-p", str(pid)] if pid else ["-A"])]
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in result.stdout.splitlines() if line.strip()]


def _stat_fields(pid: int) -> list[str] | None:
    """Return /proc/PID/stat's fields after the command name (state first), or None if it is gone."""
    try:
        return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _stat_number(pid: int, index: int) -> int | None:
    """Return one numeric field of /proc/PID/stat, counted from the state (0), or None if it is gone."""
    fields = _stat_fields(pid)
    try:
        return int(fields[index]) if fields else None
    except (ValueError, IndexError):
        return None


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
    if _has_proc():
        fields = _stat_fields(pid)
        return fields is None or fields[0] != "Z"
    state = _ps(pid, "state=")
    return not state or not state[0].strip().startswith("Z")


def pid_cmdline(pid: int) -> str:
    """Return the command line of a process, or '' if it is gone."""
    if _has_proc():
        try:
            return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return ""
    lines = _ps(pid, "command=")
    return lines[0].strip() + " " if lines else ""


def pid_argv(pid: int | None) -> list[str]:
    """Return a process's arguments, or [] if it is gone; without /proc, words split at spaces (as `ps` shows them)."""
    if not pid:
        return []
    if _has_proc():
        try:
            return (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        except OSError:
            return []
    return pid_cmdline(pid).split()


def all_pids() -> list[int]:
    """Return every PID the system lists right now."""
    if _has_proc():
        return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]
    return [int(line) for line in _ps(None, "pid=") if line.strip().isdigit()]


def running_from(folder: Path) -> list[int]:
    """Return the PIDs of live processes whose program lies under folder."""
    prefix = str(folder).rstrip("/") + "/"
    return [pid for pid in all_pids() if pid_cmdline(pid).startswith(prefix) and pid_alive(pid)]


def parent_pid(pid: int) -> int | None:
    """Return a process's parent PID, or None if it is gone."""
    if _has_proc():
        return _stat_number(pid, 1)
    lines = _ps(pid, "ppid=")
    return int(lines[0]) if lines and lines[0].strip().isdigit() else None


def session_id(pid: int) -> int | None:
    """Return the session a process belongs to, or None if it is gone."""
    if _has_proc():
        return _stat_number(pid, 3)
    try:
        return os.getsid(pid)
    except OSError:
        return None


def cpu_seconds(pid: int) -> float | None:
    """Return the CPU seconds (user and system) a live process has used, from /proc/PID/stat; None without it."""
    utime, stime = _stat_number(pid, 11), _stat_number(pid, 12)
    return None if utime is None or stime is None else (utime + stime) / os.sysconf("SC_CLK_TCK")


def start_ticks(pid: int) -> int | None:
    """Return when a process started, as a number that, with the PID, names one process.

    On Linux it is clock ticks since boot (/proc/PID/stat); elsewhere the
    start time `ps` prints, in seconds.
    """
    if _has_proc():
        return _stat_number(pid, 19)
    lines = _ps(pid, "lstart=")
    if not lines:
        return None
    try:
        return int(time.mktime(time.strptime(" ".join(lines[0].split()), "%a %b %d %H:%M:%S %Y")))
    except ValueError:
        return None


def family_table() -> dict[int, tuple[int, int]]:
    """Return every process's parent and session from one look at the system: {pid: (parent, session)}."""
    table = {}
    if _has_proc():
        for pid in all_pids():
            fields = _stat_fields(pid)
            try:
                table[pid] = (int(fields[1]), int(fields[3]))
            except (TypeError, ValueError, IndexError):  # gone since the listing
                continue
        return table
    for line in _ps(None, "pid=,ppid="):
        words = line.split()
        if len(words) == 2 and all(word.isdigit() for word in words):
            try:
                table[int(words[0])] = (int(words[1]), os.getsid(int(words[0])))
            except OSError:
                continue
    return table


def family(roots: set[int], table: dict[int, tuple[int, int]]) -> set[int]:
    """Return the roots, the processes below them and those in the sessions they lead, as `table` saw them."""
    return set(roots) | _below(roots, table) | {pid for pid, (_parent, session) in table.items() if session in roots}


def descendants(root: int) -> set[int]:
    """Return the PIDs below root."""
    return _below({root}, family_table())


def _below(roots: set[int], table: dict[int, tuple[int, int]]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (parent, _session) in table.items():
        children.setdefault(parent, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in roots:
                found.add(child)
                todo.append(child)
    return found


def in_session(session: int) -> list[int]:
    """Return the live processes of one session."""
    if _has_proc():
        return [pid for pid in all_pids() if session_id(pid) == session]
    found = []
    for pid in all_pids():
        try:
            if os.getsid(pid) == session:
                found.append(pid)
        except OSError:
            pass
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
