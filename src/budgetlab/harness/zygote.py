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
the executable, the PYTHON* variables and the lab clock, which the boot
folder's sitecustomize installs before any import. The folder and the
import path may differ: the child checks that every module the zygote
imported resolves on its own path to the same file, and replaces itself
with a fresh interpreter when one would not (`_resolves_the_same`).
Anything else starts fresh: another Python, an eventlet or gevent pool
(Celery patches those before any import, celery/__main__.py:13 in 5.6.3).

A launch script (lab 1's entrypoint.sh) runs `$PYTHON -m celery ...`
itself; `python()` gives it an interpreter that forks those from the
zygote too: a small process that asks for the fork, passes on every
signal it gets and exits as the fork did, and whose death kills the
fork (`_as_python`). The zygote keeps who asked for each fork and its
command line, so a tree stopped by PID includes the forks its processes
asked for (`forked_by`) and a check reads a fork's flags (`argv_of`).
"""

from __future__ import annotations

import json
import os
import select
import shlex
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
# PYTHON* variables the interpreter does not read at start-up: the import path (checked in the child), and the
# interpreter a launch script runs.
_NOT_STARTUP = ("PYTHONPATH", "PYTHON")
# Beside the socket: a launch script's interpreter (see `python`), and one record per fork.
_LAUNCHER_FILE, _FORKS_FOLDER = "python", "forked"
# The names a module found on an added folder would take over from the zygote's, besides what it imported.
_CUSTOMIZE = ("sitecustomize", "usercustomize")
# Its command line is the forked workers' too (a fork keeps it): it names Celery's worker of
# Kontor's app, as `budgetlab doctor` looks for a leftover master (doctoring.leftover_workers).
_ARGV_TAIL = ["celery", "-A", "kontor.celery_app", "worker"]


def _startup(env: dict[str, str]) -> dict:
    """What an interpreter started with `env` decides before its first import, its folder and import path aside."""
    names = sorted(name for name in env
                   if (name.startswith("PYTHON") or name in _STARTUP_NAMES) and name not in _NOT_STARTUP)
    return {"executable": sys.executable, "env": {name: env[name] for name in names}}


def _entries(python_path: str) -> list[str]:
    return [os.path.abspath(entry) for entry in python_path.split(os.pathsep) if entry]


def _resolves_the_same(path: list[str]) -> bool:
    """Whether every module this interpreter imported would be found on `path` in the same file.

    A fresh interpreter on `path` imports each one anew from there: a
    folder that shadows one (a learner's redis.py), or a path that lacks
    the folder one came from, would give it another module, and so would
    a sitecustomize this one never ran.
    """
    import importlib.machinery

    # Top-level names only (a package's submodules come from its folder); __main__ and __mp_main__ are the program.
    names = {name for name in sys.modules if "." not in name and not name.startswith("__")} | set(_CUSTOMIZE)
    for name in sorted(names):
        module = sys.modules.get(name)
        kept = getattr(module, "__spec__", None)
        if module is not None and not (kept is not None and kept.has_location):
            continue  # built in, frozen or a namespace: no file on any path decides it
        have = kept.origin if module is not None else None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        found = spec.origin if spec is not None and spec.has_location else None
        if (found and os.path.realpath(found)) != (have and os.path.realpath(have)):
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
        masters its checks start (lab 1's through the learner's launch
        script, `python()`); a story without one starts none (lab 5).
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
        (self._folder / _STARTUP_FILE).write_text(json.dumps({**_startup(env), "pid": self.proc.pid}))
        # `python()`'s interpreter: this Python, isolated from the variables it passes on to the fork.
        launcher = self._folder / _LAUNCHER_FILE
        launcher.write_text(f"#!/bin/sh\n{SOCKET_VARIABLE}={shlex.quote(self.variables[SOCKET_VARIABLE])} "
                            f"exec {shlex.quote(sys.executable)} -I -m {__name__} --as-python \"$@\"\n")
        launcher.chmod(0o755)

    def stop(self) -> None:
        """Kill it by PID (the workers forked from it are their grader's to stop) and remove its folder."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdin.close()
        shutil.rmtree(self._folder, ignore_errors=True)


def usable(argv: list[str], env: dict[str, str]) -> bool:
    """Whether this process may fork `argv` (`python -m ...`) from its check's zygote instead of starting it."""
    path = os.environ.get(SOCKET_VARIABLE)
    if not path or len(argv) < 3 or argv[:2] != [sys.executable, "-m"] or any(
            "gevent" in a or "eventlet" in a for a in argv):
        return False
    started = _started()
    return started is not None and {key: started[key] for key in ("executable", "env")} == _startup(env)


def python() -> str:
    """The interpreter a launch script started by a grader runs (lab 1's `$PYTHON -m celery`): one that forks
    its `-m` modules from the check's zygote when the zygote has their start-up, else this one."""
    path = os.environ.get(SOCKET_VARIABLE)
    launcher = Path(path).with_name(_LAUNCHER_FILE) if path else None
    return str(launcher) if launcher is not None and launcher.exists() else sys.executable


def forked_by(pids: set[int]) -> set[int]:
    """The live forks that processes among `pids` asked this check's zygote for (a launch script's masters)."""
    return {pid for pid, record in _records().items() if record["by"] in pids and process.pid_alive(pid)}


def argv_of(pid: int | None) -> list[str]:
    """A process's command line: a fork's as it was asked for (the kernel shows the zygote's), else its own."""
    record = _records().get(pid) if pid else None
    return record["argv"] if record else process.pid_argv(pid)


def _records() -> dict[int, dict]:
    path = os.environ.get(SOCKET_VARIABLE)
    folder = Path(path).with_name(_FORKS_FOLDER) if path else None
    found = {}
    for record in folder.iterdir() if folder is not None and folder.is_dir() else ():
        try:
            found[int(record.name)] = json.loads(record.read_text())
        except (OSError, ValueError):  # removed as its fork was reaped, or not written yet
            continue
    return found


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
            self._read(left)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _read(self, timeout: float | None) -> None:
        """Read its exit status if it comes within `timeout` seconds (None: until it comes)."""
        if self.returncode is not None:
            return
        if self._connection is None:  # the zygote is gone, and its kernel signal took its children with it
            if not process.pid_alive(self.pid):
                self.returncode = -signal.SIGKILL
            elif timeout is None or timeout > 0:
                time.sleep(0.02)
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
    if usable(argv, env):
        forked = _fork(argv, env, cwd, (stdin, stdout, stderr), text)
        if forked is not None:
            return forked
    from budgetlab.harness.workers import die_with_parent

    return subprocess.Popen(argv, env=env, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd, text=text,
                            bufsize=1 if text else -1, start_new_session=True, preexec_fn=die_with_parent())


def _fork(argv: list[str], env: dict[str, str], cwd: Path | None, streams: tuple, text: bool,
          tied: bool = False) -> Forked | None:
    """Ask the zygote for the process; None when it cannot be asked (the process then starts fresh).

    A stream is what Popen takes, or an fd of this process's own; a `tied` fork is killed once this
    process is gone."""
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
            given.append(stream if isinstance(stream, int) else stream.fileno())
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    # The zygote answers between two imports: its longest, the model client's, is under a second here.
    connection.settimeout(30.0)
    try:
        _connect(connection)
        request = json.dumps({"argv": argv, "env": env, "cwd": str(cwd) if cwd else None, "by": os.getpid(),
                              "tied": tied}).encode() + b"\n"
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
    records = os.path.join(os.path.dirname(path), _FORKS_FOLDER)
    os.makedirs(records, exist_ok=True)
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
                    _serve_one(connection, children, let_go, records, selector)
                except OSError:  # the asking process went away: it starts its worker fresh, if at all
                    connection.close()
            elif key.fileobj == woken:
                os.read(woken, 512)
                _reap(children, records, selector)
            elif key.fileobj == sys.stdin.fileno():
                # The check's process ended: so does the zygote, and its children with it (their death signal).
                _remove_folder(path)
                os._exit(0)
            elif not key.fileobj.recv(64):  # a tied fork's asker is gone: so is the fork, as the asker would be
                selector.unregister(key.fileobj)
                pid = next((pid for pid, connection in children.items() if connection is key.fileobj), None)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)


def _remove_folder(path: str) -> None:
    """Remove the folder the check made for this zygote, as its `stop` would have: the check ended without it."""
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


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


def _serve_one(connection: socket.socket, children: dict[int, socket.socket], let_go, records: str,
               selector) -> None:
    import selectors

    request, fds, _flags, _address = socket.recv_fds(connection, 65536, 3)
    while request and not request.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        request += chunk
    try:
        asked = json.loads(request) if request.endswith(b"\n") and len(fds) == 3 else None
    except ValueError:
        asked = None
    if asked is None:
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
            _become(asked, fds, parent)
        finally:
            os._exit(70)
    for fd in fds:  # the child's now: a pipe end left open here would never report its end
        os.close(fd)
    children[pid] = connection
    # Written whole (a rename) before its asker learns the PID: whoever reads the PID finds the record.
    written = os.path.join(records, f".{pid}")
    with open(written, "w") as record:
        json.dump({"by": asked.get("by"), "argv": asked["argv"]}, record)
    os.replace(written, os.path.join(records, str(pid)))
    if asked.get("tied"):
        selector.register(connection, selectors.EVENT_READ)
    connection.sendall(f"pid {pid}\n".encode())


def _reap(children: dict[int, socket.socket], records: str, selector) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        try:
            os.unlink(os.path.join(records, str(pid)))
        except OSError:
            pass
        connection = children.pop(pid, None)
        if connection is not None:
            try:
                selector.unregister(connection)  # a tied fork's
            except KeyError:
                pass
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
    argv = request["argv"]
    # Its import path as the interpreter would have begun it: the folder, its PYTHONPATH, then the rest as here.
    own = _entries(os.environ.get("PYTHONPATH", ""))
    path = list(dict.fromkeys([os.getcwd(), *own, *(entry for entry in sys.path[1:] if entry not in zygote_path)]))
    if not _resolves_the_same(path):  # it would import something else than what this process holds: start afresh
        os.execve(sys.executable, argv, request["env"])
    sys.path[:] = path
    tempfile.tempdir = None  # read again from TMPDIR, which is the worker's
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding=sys.stdout.encoding,
                                                   write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding=sys.stderr.encoding,
                                                   errors="backslashreplace", write_through=True)
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


def _as_python(args: list[str]) -> None:
    """Be `python ARGS` for a launch script: fork `-m` modules from the zygote and stand in for the fork, else exec.

    Every signal a launch script or a stopping grader can send is passed on
    to the fork; the fork's exit is this process's, a signal's included; and
    the zygote kills the fork once this process is gone (a tied fork), as the
    fork would be gone had it been this process.
    """
    argv, env = [sys.executable, *args], dict(os.environ)
    env.pop(SOCKET_VARIABLE, None)  # the launcher's own, never the process's
    forked = _fork(argv, env, Path.cwd(), (0, 1, 2), False, tied=True) if usable(argv, env) else None
    if forked is None:
        os.execve(sys.executable, argv, env)

    def pass_on(number: int, _frame) -> None:
        try:
            os.kill(forked.pid, number)
        except ProcessLookupError:
            pass

    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, pass_on)
    forked.wait()
    if forked.returncode < 0:  # ended by a signal: end by the same one, so that a shell's `wait` reads the same
        number = -forked.returncode
        if number not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
        os._exit(128 + number)
    os._exit(forked.returncode)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--as-python"]:
        _as_python(sys.argv[2:])
    _serve(os.environ.pop(SOCKET_VARIABLE))
