"""A waiting interpreter that has imported what every worker master imports; a check's workers are forked from it.

A worker master spends most of its start importing Celery, kombu, Django's
ORM, the database and Redis clients and the model client: a lab 8 master
took 1.4-1.5 s to its "ready." line here, and 0.6 s when forked from an
interpreter that had imported them. `budgetlab check` starts one (`Zygote`)
before pytest, on the clock and import path its lab's workers get, and it
imports them while pytest starts. `start` then forks a grader's
`python -m celery ... worker` from it (and lab 8's web process): the
child takes the process's environment, import path, standard streams
(passed over the socket), folder and a session of its own, and runs the
module's `__main__` as `python -m` would. Its exit status comes back over
the connection that asked for it (`Forked`, read like a Popen).

The kernel keeps a process's first environment in /proc/PID/environ: a
forked worker's shows the zygote's, while its os.environ is its own.

Only what the interpreter decides at start-up must match (`_startup`):
the executable, the folder, the PYTHON* variables (an import folder may
be added) and the lab clock, which the boot folder's sitecustomize
installs before any import. Anything else starts fresh: a launch script, another Python,
an eventlet or gevent pool (Celery patches those before any import,
celery/__main__.py:13 in 5.6.3).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budgetlab.stack import process

# Set in the grading process's environment: the zygote's socket, beside which it keeps what it started with.
SOCKET_VARIABLE = "BUDGETLAB_ZYGOTE"
VARIABLES = (SOCKET_VARIABLE,)
_STARTUP_FILE = "startup.json"
# Set (to anything) by a maintainer: every worker starts as its own interpreter, as `budgetlab run` starts them.
FRESH_VARIABLE = "BUDGETLAB_FRESH_WORKERS"
# What every worker master imports before its app; then what the story's WORKER_IMPORTS adds (the model
# client of labs 6 and 8). The zygote stops at the first request, and the worker imports the rest itself.
PRELOAD = ("celery.bin.celery", "celery.apps.worker", "celery.worker.consumer", "celery.concurrency.prefork",
           "kombu.transport.redis", "redis", "psycopg", "django.db.models")
# The zygote's own variable: what it imports after PRELOAD.
_MORE_VARIABLE = "BUDGETLAB_ZYGOTE_IMPORTS"
# Variables, besides PYTHON*, that the interpreter or the boot folder's sitecustomize reads at start-up.
_STARTUP_NAMES = ("BUDGETLAB_CLOCK", "BUDGETLAB_CLOCK_ANCHOR", "LANG", "LC_ALL", "LC_CTYPE")
# Its command line is the forked workers' too (a fork keeps it): it names Celery's worker of
# Kontor's app, as `budgetlab doctor` looks for a leftover master (doctoring.leftover_workers).
_ARGV_TAIL = ["celery", "-A", "kontor.celery_app", "worker"]


def _startup(env: dict[str, str], cwd: str) -> dict:
    """What an interpreter started with `env` in `cwd` decides before its first import, its import path aside."""
    names = sorted(name for name in env
                   if (name.startswith("PYTHON") or name in _STARTUP_NAMES) and name != "PYTHONPATH")
    return {"executable": sys.executable, "cwd": os.path.abspath(cwd), "env": {name: env[name] for name in names},
            "path": _entries(env.get("PYTHONPATH", ""))}


def _entries(python_path: str) -> list[str]:
    return [os.path.abspath(entry) for entry in python_path.split(os.pathsep) if entry]


def _imports_the_same(started: dict, startup: dict) -> bool:
    """Whether a worker's start-up is the zygote's, or differs only by folders added to its import path.

    An added folder must not hold a sitecustomize (which the zygote never
    ran) or a library the zygote imported (which it would have shadowed).
    """
    same = {key: value for key, value in started.items() if key not in ("path", "pid", "imports")}
    if same != {key: value for key, value in startup.items() if key != "path"} or \
            not set(started["path"]) <= set(startup["path"]):
        return False
    shadowing = {"sitecustomize.py", *(name.split(".")[0] for name in started["imports"])}
    for entry in set(startup["path"]) - set(started["path"]):
        try:
            names = {name.removesuffix(".py") if name != "sitecustomize.py" else name for name in os.listdir(entry)}
        except OSError:
            continue
        if names & shadowing:
            return False
    return True


class Zygote:
    """The waiting interpreter of one check: named before pytest starts, started beside it, stopped by PID after it."""

    def __init__(self):
        from budgetlab.inworker import clock

        # A socket's path has room for about 100 bytes: a short private folder, not the checkout's.
        self._folder = Path(tempfile.mkdtemp(prefix="budgetlab-zygote-"))
        # The clock's anchor is fixed here for pytest, its workers and the zygote alike, not in this process.
        self._anchor = os.environ.get(clock.ANCHOR_VARIABLE) or repr(time.time())
        self.proc: subprocess.Popen | None = None

    @property
    def variables(self) -> dict[str, str]:
        """What the grading process's environment needs to find the zygote (and share its clock)."""
        from budgetlab.inworker import clock

        return {SOCKET_VARIABLE: str(self._folder / "socket"), clock.ANCHOR_VARIABLE: self._anchor}

    def start(self, story: str | None, target_dir: Path, cwd: Path) -> None:
        """Start importing as a worker of the lab whose story module is `story` starts; nothing when it forks none.

        The story's `worker_clock()` is the clock of the `celery worker`
        masters its checks start; a story without one starts none that a
        zygote could serve (lab 1's come from the learner's launch script).
        """
        import importlib

        from budgetlab.harness.workers import Environment, die_with_parent, environ_set
        from budgetlab.inworker import clock

        module = importlib.import_module(story) if story else None
        worker_clock = getattr(module, "worker_clock", None)
        if worker_clock is None or os.environ.get(FRESH_VARIABLE):
            return
        more = list(getattr(module, "WORKER_IMPORTS", ()))
        with environ_set(clock.ANCHOR_VARIABLE, self._anchor):
            env = Environment(target_dir, "", "", extra={"BUDGETLAB_CLOCK": str(worker_clock())}).variables()
        # Its stdin is a pipe this process never writes to: it ends when this process does, however it
        # ends, and the zygote with it (a kernel signal reaches only a process started from the main thread).
        self.proc = subprocess.Popen([sys.executable, "-m", __name__, *_ARGV_TAIL],
                                     env={**env, **self.variables, _MORE_VARIABLE: ",".join(more)}, cwd=cwd,
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=die_with_parent())
        (self._folder / _STARTUP_FILE).write_text(json.dumps({**_startup(env, str(cwd)), "pid": self.proc.pid,
                                                               "imports": [*PRELOAD, *more]}))

    def stop(self) -> None:
        """Kill it by PID (the workers forked from it are their grader's to stop) and remove its folder."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdin.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def usable(argv: list[str], env: dict[str, str], cwd: Path | None) -> bool:
    """Whether this process may fork `argv` (`python -m ...`) from its check's zygote instead of starting it."""
    path = os.environ.get(SOCKET_VARIABLE)
    if not path or len(argv) < 3 or argv[:2] != [sys.executable, "-m"] or any(
            "gevent" in a or "eventlet" in a for a in argv):
        return False
    started = _started()
    return started is not None and _imports_the_same(started, _startup(env, str(cwd or os.getcwd())))


def _started() -> dict | None:
    """What the check's zygote started with, and its PID; None when the check started none."""
    try:
        return json.loads(Path(os.environ[SOCKET_VARIABLE]).with_name(_STARTUP_FILE).read_text())
    except (KeyError, OSError, ValueError):
        return None


class Forked:
    """A process forked by the zygote, read as subprocess.Popen is: pid, stdin, stdout, poll(), wait(), kill()."""

    def __init__(self, pid: int, connection: socket.socket, stdin=None, stdout=None):
        self.pid, self._connection, self.stdin, self.stdout = pid, connection, stdin, stdout
        self.returncode: int | None = None
        self._said = b""

    def poll(self) -> int | None:
        self._read(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(["forked"], timeout)
            self._read(0.05 if left is None else min(left, 0.05))
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read(self, timeout: float) -> None:
        if self.returncode is not None:
            return
        if self._connection is None:  # the zygote is gone, and its kernel signal took its children with it
            if not process.pid_alive(self.pid):
                self.returncode = -signal.SIGKILL
            return
        ready, _, _ = select.select([self._connection], [], [], timeout)
        if not ready:
            return
        chunk = self._connection.recv(64)
        self._said += chunk
        if b"\n" in self._said:
            self.returncode = int(self._said.split(b"\n", 1)[0].split()[1])
        if b"\n" in self._said or not chunk:
            self._connection.close()
            self._connection = None


def start(argv: list[str], env: dict[str, str], *, stdin=subprocess.DEVNULL, stdout=None, stderr=None,
          cwd: Path | None = None, text: bool = False):
    """Start `argv` as the rig starts its processes, in a session of its own: forked from the check's zygote
    when it has the process's start-up (the kernel kills it with the zygote, which ends with the check), else
    a fresh subprocess.Popen (killed with the thread that started it, if that is the main thread).
    stdin, stdout and stderr take what Popen takes, None aside: DEVNULL, PIPE, STDOUT or a file."""
    if usable(argv, env, cwd):
        forked = _fork(argv, env, cwd, (stdin, stdout, stderr), text)
        if forked is not None:
            return forked
    from budgetlab.harness.workers import die_with_parent

    return subprocess.Popen(argv, env=env, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, text=text,
                            bufsize=1 if text else -1, start_new_session=True, preexec_fn=die_with_parent())


def _fork(argv: list[str], env: dict[str, str], cwd: Path | None, streams: tuple, text: bool) -> Forked | None:
    """Ask the zygote for the process; None when it cannot be asked (the process then starts fresh)."""
    given, ours, kept = [], [], [None, None]  # the child's three fds; fds opened here for it; our pipe ends
    for number, stream in enumerate(streams):
        if stream == subprocess.STDOUT:
            given.append(given[1])
        elif stream == subprocess.DEVNULL:
            given.append(os.open(os.devnull, os.O_RDWR))
            ours.append(given[-1])
        elif stream == subprocess.PIPE:
            read, write = os.pipe()
            given.append(read if number == 0 else write)
            ours.append(given[-1])
            kept[min(number, 1)] = write if number == 0 else read
        else:
            given.append(stream.fileno())
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The zygote answers between two imports: its longest, the model client's, is under a second here.
    connection.settimeout(30.0)
    try:
        _connect(connection)
        request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd) if cwd else None}).encode() + b"\n"
        sent = socket.send_fds(connection, [request], given)
        connection.sendall(request[sent:])
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = connection.recv(64)
            if not chunk:
                raise OSError("the zygote closed the connection")
            answer += chunk
    except OSError:  # socket.timeout included
        connection.close()
        for fd in kept:
            if fd is not None:
                os.close(fd)
        return None
    finally:
        for fd in ours:
            try:
                os.close(fd)
            except OSError:
                pass
    connection.settimeout(None)
    mode = "" if text else "b"
    stdin = open(kept[0], "w" + mode, buffering=1 if text else -1) if kept[0] is not None else None
    stdout = open(kept[1], "r" + mode) if kept[1] is not None else None
    return Forked(int(answer.split()[1]), connection, stdin, stdout)


def _connect(connection: socket.socket) -> None:
    """Connect to the zygote, waiting while it is alive and not listening yet (its interpreter still starting)."""
    deadline = time.monotonic() + 10.0
    while True:
        try:
            connection.connect(os.environ[SOCKET_VARIABLE])
            return
        except (FileNotFoundError, ConnectionRefusedError):
            started = _started()
            if started is None or not process.pid_alive(started["pid"]) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


# The zygote itself: `python -m budgetlab.harness.zygote celery -A kontor.celery_app worker`.

def _serve(path: str) -> None:
    import selectors

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that the wakeup fd hears of every exit
    _preload(listener)
    children: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(woken, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)  # readable once the check's process ended

    def let_go() -> None:
        """In a forked child: close what serves the zygote (a closed socket object closes no other fd later)."""
        signal.set_wakeup_fd(-1)
        for sock in [listener, *children.values()]:
            sock.close()
        selector.close()
        os.close(woken)
        os.close(wake)

    while True:
        for key, _events in selector.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                try:
                    _serve_one(connection, children, let_go)
                except OSError:  # the asking process went away: it starts its worker fresh, if at all
                    connection.close()
            elif key.fileobj == woken:
                os.read(woken, 512)
                _reap(children)
            else:  # the check's process ended: so does the zygote, and its children with it (their death signal)
                _remove_folder(path)
                os._exit(0)


def _remove_folder(path: str) -> None:
    """Remove the folder the check made for this zygote, as its `stop` would have: the check ended without it."""
    folder = os.path.dirname(path)
    for name in (os.path.basename(path), _STARTUP_FILE):
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _preload(listener: socket.socket) -> None:
    import importlib

    import budgetlab.harness.workers  # noqa: F401 - what a forked process calls first

    for name in [*PRELOAD, *filter(None, os.environ.pop(_MORE_VARIABLE, "").split(","))]:
        if select.select([listener], [], [], 0)[0]:  # a worker is asked for: it imports the rest itself
            return
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library this environment lacks is imported (and fails) in the worker
            pass


def _serve_one(connection: socket.socket, children: dict[int, socket.socket], let_go) -> None:
    request, fds, _flags, _address = socket.recv_fds(connection, 65536, 3)
    while request and not request.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        request += chunk
    if not request.endswith(b"\n") or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        connection.close()
        return
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            let_go()
            connection.close()
            _become(json.loads(request), fds, parent)
        finally:
            os._exit(70)
    for fd in fds:  # the child's now: a pipe end left open here would never report its end
        os.close(fd)
    children[pid] = connection
    connection.sendall(f"pid {pid}\n".encode())


def _reap(children: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            try:
                connection.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            connection.close()


def _become(request: dict, fds: list[int], parent: int) -> None:
    """Turn this fork into the process asked for, as subprocess.Popen would start it; never returns."""
    import io
    import runpy
    import traceback

    from budgetlab.harness.workers import set_death_signal

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    os.setsid()
    set_death_signal(parent)
    for number, fd in enumerate(fds):
        os.dup2(fd, number)
    for fd in set(fds) - {0, 1, 2}:
        os.close(fd)
    if request["cwd"]:
        os.chdir(request["cwd"])
    zygote_path = set(_entries(os.environ.get("PYTHONPATH", "")))
    os.environ.clear()
    os.environ.update(request["env"])
    # Its import path as the interpreter would have begun it: the folder, its PYTHONPATH, then the rest as here.
    own = _entries(os.environ.get("PYTHONPATH", ""))
    sys.path[1:] = list(dict.fromkeys([*own, *(entry for entry in sys.path[1:] if entry not in zygote_path)]))
    tempfile.tempdir = None  # read again from TMPDIR, which is the worker's
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=sys.stdout.encoding,
                                                   write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=sys.stderr.encoding,
                                                   errors="backslashreplace", write_through=True)
    argv = request["argv"]
    sys.argv = [argv[0], *argv[3:]]
    code = 0
    try:
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - printed and turned into an exit status, as the interpreter does
        traceback.print_exc()
        code = 1
    _exit(code)


def _exit(code: int) -> None:
    """End as an interpreter does: wait for its threads, run its exit functions, flush, then leave."""
    import atexit
    import threading

    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    _serve(os.environ.pop(SOCKET_VARIABLE))
