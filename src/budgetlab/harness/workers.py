"""Real Celery workers for runs and graders: started with a target's code, stopped by PID.

A worker here is a real `celery worker` master (prefork unless its
settings name another pool), on the lab clock, against the stack's
PostgreSQL and Redis. Readiness is
the worker's own "<hostname> ready." log line, never a sleep or a ping.
Stopping sends SIGTERM to every process of the tree by PID, then SIGKILL
to whatever is left, and confirms that nothing remains; a check that has
its verdict kills the tree at once instead of waiting for a warm shutdown.
A tree's first process dies with the process that started it, even when
that one is killed with SIGKILL and can stop nothing (see die_with_parent).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import re
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.harness import checkreport, zygote
from budgetlab.inworker import clock, servertime
from budgetlab.stack import process

READY = re.compile(r"(\S+@\S+) ready\.")
# A child the hard limit ended: its SIGKILL, or the SIGTERM before it, which billiard's handler in the
# child turns into sys.exit(-241), exit status 15, when the child unwinds within the 0.1 s between them.
KILLED = re.compile(r"Process '(\S+)' pid:(\d+) exited with '(signal 9 \(SIGKILL\)|signal 15 \(SIGTERM\)|exitcode 15)'")
# Celery's fastest start: no cluster chatter the workshop does not need.
FAST_FLAGS = ["--without-mingle", "--without-gossip", "--without-heartbeat"]
# Masters of one launch script become ready within seconds of each other; this long without another means no more come.
QUIET_SECONDS = 30.0


@dataclass
class Environment:
    """What a worker needs to know: the code to load and the servers to use."""

    target_dir: Path
    database_url: str
    broker_url: str
    modules: list[str] = field(default_factory=list)
    settings_module: str | None = None
    latency_plan: Path | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def variables(self) -> dict[str, str]:
        env = dict(os.environ)
        # The servers are given explicitly; nothing sets the lab-1 variable by accident; the check's zygote
        # is its grading process's (budgetlab.harness.zygote).
        for name in ("DATABASE_URL", "REDIS_URL", "SOFT_TIME_LIMIT", *zygote.VARIABLES):
            env.pop(name, None)
        env.update(
            PYTHONPATH=os.pathsep.join([str(self.target_dir), *filter(None, [env.get("PYTHONPATH")])]),
            KONTOR_DATABASE_URL=self.database_url,
            KONTOR_BROKER_URL=self.broker_url,
            KONTOR_RESULT_BACKEND=self.broker_url,
            KONTOR_TASK_MODULES=",".join(self.modules),
            BUDGETLAB_CLOCK=str(clock.factor()),
            BUDGETLAB_CLOCK_ANCHOR=repr(clock.anchor()),
            PYTHONUNBUFFERED="1",
        )
        if self.settings_module:
            env["KONTOR_CELERY_SETTINGS"] = self.settings_module
        if self.latency_plan:
            env["KONTOR_LATENCY_PLAN"] = str(self.latency_plan)
        env.update(self.extra)
        return on_lab_clock(env)


@contextlib.contextmanager
def environ_set(name: str, value: str) -> Iterator[None]:
    """Set one variable of this process's environment for the block, then put back what was there."""
    inherited = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if inherited is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = inherited


def on_lab_clock(env: dict[str, str]) -> dict[str, str]:
    """Put the processes started with `env` on the lab clock its BUDGETLAB_CLOCK names (an override included).

    Their Python starts through the boot folder's sitecustomize, whatever
    PYTHONPATH a caller chose, and their PostgreSQL connections read now()
    on the same clock (PGOPTIONS).
    """
    env = dict(env)
    paths = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry and entry != str(clock.BOOT_DIR)]
    env["PYTHONPATH"] = os.pathsep.join([str(clock.BOOT_DIR), *paths])
    env.setdefault("BUDGETLAB_CLOCK_ANCHOR", repr(clock.anchor()))
    options = servertime.connection_options(float(env.get("BUDGETLAB_CLOCK") or clock.factor()),
                                            float(env["BUDGETLAB_CLOCK_ANCHOR"]))
    env["PGOPTIONS"] = " ".join(filter(None, [os.environ.get("PGOPTIONS", ""), options]))
    return env


def celery_argv(queues: list[str], hostname: str, concurrency: int = 1, extra: list[str] | None = None) -> list[str]:
    """Return the command line of one worker master consuming the given queues."""
    return [sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker", "-Q", ",".join(queues),
            "-n", hostname, "-c", str(concurrency), "-l", "INFO", *FAST_FLAGS, *(extra or [])]


# prctl(2) from the C library, looked up before any fork: the child between fork and exec may only call it.
try:
    _prctl = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
except (OSError, AttributeError):  # not Linux: trees are still stopped by PID, just not on their parent's death
    _prctl = None
_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """Return a preexec_fn that has the kernel SIGKILL the child when the thread that started it ends, or None.

    A budgetlab process killed with SIGKILL (a test's or a learner's last
    resort after a Ctrl-C that hung) cannot stop its workers; the kernel's
    parent-death signal does. It reaches only the tree's first process: a
    worker master's pool children already die with their master (Celery's
    prefork sets the same signal for them, celery/concurrency/prefork.py:48
    in 5.6.3), while masters a launch script started in the background
    (lab 1's entrypoint.sh under `budgetlab run`) outlive it, and `budgetlab
    doctor` names them; under `budgetlab check` they are forks of its
    zygote and die with it.
    The signal follows the starting *thread*, so it is set only for a tree
    started from the main thread, which lives as long as the process.
    """
    if _prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()
    return lambda: set_death_signal(parent)


def set_death_signal(parent: int) -> None:
    """Have the kernel SIGKILL this process when the thread of `parent` that started it ends; exit if it has."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def unique_hostname(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:6]}@budgetlab"


class WorkerTree:
    """A started worker process (or a launch script) and everything it forked."""

    def __init__(self, argv: list[str], env: Environment, log: Path, expect_ready: int = 1, cwd: Path | None = None):
        self.argv, self.env, self.log, self.expect_ready = argv, env, log, expect_ready
        self.cwd = cwd
        self.proc = None
        self._seen: set[int] = set()

    def __enter__(self) -> "WorkerTree":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 30.0, wait: bool = True) -> None:
        """Start the tree and wait for every expected "ready." line (with wait=False, `finish_start` waits)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log.write_bytes(b"")
        import subprocess

        # Forked from the check's zygote when it has the worker's start-up, else started fresh.
        with open(self.log, "ab") as out:
            self.proc = zygote.start(self.argv, self.env.variables(), stdout=out, stderr=subprocess.STDOUT,
                                     cwd=self.cwd)
        # Under `budgetlab check`: it keeps this log's tail when grading breaks, and stops
        # the tree itself if the grading process dies before it could.
        checkreport.write({"kind": "worker", "log": str(self.log), "pid": self.proc.pid,
                           "started": process.start_ticks(self.proc.pid)})
        if wait:
            self.finish_start(timeout)

    def finish_start(self, timeout: float = 30.0) -> None:
        """Wait for every expected "ready." line of a started tree; stop the tree when they do not come."""
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        # A worker that started has imported the code it runs: `budgetlab check` needs no import probe.
        checkreport.write({"kind": "ready", "pid": self.proc.pid})

    def wait_ready(self, timeout: float) -> None:
        # Only the log is polled: a /proc scan costs ~10 ms of CPU on a busy machine, and
        # the tree's processes are found by their session when it is stopped (see _remember_tree).
        # A launch script's masters compete for two cores to start, and each read is a whole
        # file: their log is read five times less often.
        interval = 0.02 if self.expect_ready == 1 else 0.1
        deadline = time.monotonic() + timeout
        ready, last_change = 0, time.monotonic()
        while time.monotonic() < deadline:
            now_ready = len(self.ready_hostnames())
            if now_ready >= self.expect_ready:
                self._remember_tree()
                return
            if self.proc.poll() is not None:
                break
            if now_ready != ready:
                ready, last_change = now_ready, time.monotonic()
            elif ready and time.monotonic() - last_change > QUIET_SECONDS:
                break  # some masters are up and no other one follows: the script started fewer
            time.sleep(interval)
        raise BudgetlabError(f"the worker did not start: {self.last_error() or 'no ready line in its log'} "
                             f"(log: {self.log})")

    def ready_hostnames(self) -> list[str]:
        return READY.findall(self.text())

    def text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def last_error(self) -> str:
        """Return the last line of a traceback or error in the log, for a one-line message."""
        lines = [line for line in self.text().splitlines() if line.strip()]
        for line in reversed(lines):
            if re.match(r"^\w*(Error|Exception)\b|^\w+\.\w+Error|Error:|error:", line.strip()):
                return line.strip()
        return lines[-1].strip() if lines else ""

    def killed_children(self) -> list[int]:
        """Return the PIDs of pool children that a hard time limit ended (its SIGKILL, or the SIGTERM before it)."""
        return [int(pid) for _name, pid, _status in KILLED.findall(self.text())]

    def pids(self) -> set[int]:
        """Return every live PID of the tree seen so far."""
        self._remember_tree()
        return {pid for pid in self._seen if process.pid_alive(pid)}

    def _remember_tree(self) -> None:
        if self.proc is None:
            return
        self._seen |= tree_of(self.proc.pid)

    def stop(self, grace: float = 10.0) -> None:
        """Stop every process of the tree by PID and make sure none is left.

        Every process first gets SIGTERM (Celery's warm shutdown) and up to
        `grace` seconds to let running tasks end; whatever is left then is
        killed. Even an idle worker takes a second or more to shut down warm.
        """
        if self.proc is None:
            return
        if grace > 0:
            self._remember_tree()
            for pid in [pid for pid in self._seen if process.pid_alive(pid)]:
                _signal(pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.pids():
                self.proc.poll()
                time.sleep(0.02)
        self._kill_all()

    def kill(self) -> None:
        """Stop the tree at once, for when nothing it still runs matters (a check that has its verdict).

        Milliseconds instead of a warm shutdown's seconds: every process
        is frozen and killed by PID, and nothing is left behind.
        """
        self.stop(grace=0)

    def _kill_all(self) -> None:
        # Freeze first, until a look at the tree finds no process that is not frozen yet:
        # a frozen master cannot fork a new child between the last look and the kill.
        frozen: set[int] = set()
        while True:
            self._remember_tree()
            fresh = {pid for pid in self._seen if pid not in frozen and process.pid_alive(pid)}
            if not fresh:
                break
            for pid in fresh:
                _signal(pid, signal.SIGSTOP)
            frozen |= fresh
        for pid in frozen:
            _signal(pid, signal.SIGKILL)
        self.proc.wait()
        while self.pids():
            time.sleep(0.02)


def tree_of(root: int) -> set[int]:
    """Return root, the processes below it, those still in its session, and the trees of the forks they asked
    the check's zygote for (a launch script's masters, zygote.python).

    The tree is started in a session of its own. A process whose parent
    exited (a master when its launch script ends) leaves the tree of
    parents but keeps the session, so it is found all the same.
    """
    # One look at the system for the whole tree: a look costs a read of every process's stat.
    table = process.family_table()
    found, roots = set(), {root}
    while roots:
        found |= process.family(roots, table)
        roots = zygote.forked_by(found) - found
    return found


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass
