"""A worker forked from a check's zygote is the worker a fresh interpreter would be: its environment, session, exits."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from budgetlab.harness import zygote
from budgetlab.harness.rig import WorkerDidNotStart
from budgetlab.stack import process

# Lab 4's story: its workers run on the clock in force, as the rig's do by default.
STORY = "budgetlab.stories.lab4"


@pytest.fixture
def waiting(rig, monkeypatch):
    """A zygote started as `budgetlab check` starts one, this process's workers told where it is."""
    started = zygote.Zygote()
    for name, value in started.variables.items():
        monkeypatch.setenv(name, value)
    started.start(STORY, rig.target_dir, Path.cwd())
    yield started
    started.stop()
    assert not process.pid_alive(started.proc.pid), "the zygote outlived its stop"


@pytest.mark.stack
def test_a_forked_worker_has_its_own_environment_session_and_import_path(waiting, rig, start_worker, celery_client,
                                                                         queue_name, tmp_path):
    """It is the zygote's child, in a session of its own, with the worker's variables and an added import folder."""
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "forked_probe_tasks.py").write_text(
        "from kontor.celery_app import app\n\n\n@app.task(name='forked.where')\ndef where():\n    import os, sys\n"
        "    return [os.getpid(), sys.path, os.environ.get('KONTOR_DEFAULT_QUEUE'),\n"
        "            sorted(name for name in os.environ if 'ZYGOTE' in name)]\n")
    path = os.pathsep.join(filter(None, [str(rig.target_dir), str(extra), os.environ.get("PYTHONPATH")]))
    worker = start_worker([queue_name], ["forked_probe_tasks"], extra_env={"PYTHONPATH": path})
    master = worker.proc.pid
    assert process.parent_pid(master) == waiting.proc.pid, "the worker was started fresh, not forked from the zygote"
    assert process.pid_argv(master) != worker.argv, "the fork replaced itself with a fresh interpreter"
    assert os.getsid(master) == master, "the forked worker shares a session with the zygote"
    child, sys_path, queue, leaked = celery_client.send_task("forked.where", queue=queue_name).get(timeout=30)
    assert (queue, leaked) == (queue_name, []), f"the worker's environment names queue {queue} and {leaked}"
    assert process.parent_pid(child) == master, "the task ran outside the forked master's pool"
    assert str(extra) in sys_path, f"the added folder is not on the worker's import path: {sys_path}"


@pytest.mark.stack
def test_a_forked_worker_that_cannot_start_exits_as_a_fresh_one_does(waiting, rig, kontor_db, queue_name):
    """A worker whose task module is missing exits with the status the same worker started fresh exits with."""
    with pytest.raises(WorkerDidNotStart) as refused:
        rig.start_worker([queue_name], ["no_such_module_anywhere"])
    forked = refused.value.tree.proc
    assert isinstance(forked, zygote.Forked), "the refused worker was not forked from the zygote"
    os.environ.pop(zygote.SOCKET_VARIABLE)
    with pytest.raises(WorkerDidNotStart) as fresh:
        rig.start_worker([queue_name], ["no_such_module_anywhere"])
    assert forked.returncode == fresh.value.tree.proc.returncode != 0, (
        f"forked: exit {forked.returncode}, fresh: exit {fresh.value.tree.proc.returncode}")


@pytest.mark.stack
def test_a_killed_forked_worker_reads_as_killed(waiting, start_worker, queue_name):
    """Its exit status comes from the zygote, which reaped it: SIGKILL reads as -9, as Popen reads it."""
    worker = start_worker([queue_name], [])
    assert isinstance(worker.proc, zygote.Forked), "the worker was not forked from the zygote"
    os.kill(worker.proc.pid, signal.SIGKILL)
    assert worker.proc.wait(timeout=10) == -signal.SIGKILL


@pytest.mark.stack
def test_a_forked_process_talks_through_pipes_and_ends_with_its_input(waiting, rig, tmp_path):
    """Kontor's web process is forked with pipes for its input and output, as Popen gives them, and ends at EOF."""
    (tmp_path / "shout_lines.py").write_text(
        "import sys\nfor line in sys.stdin:\n    print(line.upper(), end='', flush=True)\n")
    path = os.pathsep.join(filter(None, [str(rig.target_dir), str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = rig.environment([], extra_env={"PYTHONPATH": path}).variables()
    with open(tmp_path / "err.log", "ab") as err:
        shouting = zygote.start([zygote.sys.executable, "-m", "shout_lines"], env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, text=True)
    assert isinstance(shouting, zygote.Forked), "the process was not forked from the zygote"
    shouting.stdin.write("hello\n")
    assert shouting.stdout.readline() == "HELLO\n"
    shouting.stdin.close()
    assert shouting.wait(timeout=10) == 0, (tmp_path / "err.log").read_text()


@pytest.mark.stack
def test_the_zygote_ends_when_the_process_that_started_it_does(waiting):
    """Its input is a pipe only its starter holds: once that closes, however the starter ended, it exits, and
    removes the folder its starter could no longer remove."""
    folder = Path(waiting.variables[zygote.SOCKET_VARIABLE]).parent
    assert folder.is_dir()
    waiting.proc.stdin.close()
    assert waiting.proc.wait(timeout=10) == 0
    assert not folder.exists(), sorted(path.name for path in folder.iterdir())


def _startup_folder(tmp_path, env: dict[str, str]) -> dict[str, str]:
    (tmp_path / "startup.json").write_text(json.dumps({**zygote._startup(env), "pid": os.getpid()}))
    return {zygote.SOCKET_VARIABLE: str(tmp_path / "socket")}


def test_only_a_worker_with_the_zygotes_start_up_is_forked(tmp_path, monkeypatch):
    """Another clock, another Python or a gevent pool: started fresh; another folder or import path: asked for."""
    env = {"PYTHONPATH": "/boot:/target", "BUDGETLAB_CLOCK": "0.005", "PYTHONUNBUFFERED": "1", "KONTOR_X": "1"}
    for name, value in _startup_folder(tmp_path, env).items():
        monkeypatch.setenv(name, value)
    celery = [zygote.sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker"]
    assert zygote.usable(celery, {**env, "KONTOR_X": "2"})
    assert zygote.usable(celery, {**env, "PYTHONPATH": f"/boot:/target:{tmp_path}"})
    assert zygote.usable(celery, {**env, "PYTHONPATH": "/boot", "PYTHON": "/launcher"})
    assert not zygote.usable(celery, {**env, "BUDGETLAB_CLOCK": "0.04"})
    assert not zygote.usable(celery, {**env, "PYTHONHASHSEED": "0"})
    assert not zygote.usable(["/other/python", *celery[1:]], env)
    assert not zygote.usable([*celery, "-P", "gevent"], env)
    assert not zygote.usable(["bash", "entrypoint.sh"], env)
    monkeypatch.delenv(zygote.SOCKET_VARIABLE)
    assert not zygote.usable(celery, env)


# Run in an interpreter that imported what a zygote imports (this one imported every test's modules too).
_RESOLVES = """
import importlib, json, os, sys
from budgetlab.harness import zygote
for name in zygote.PRELOAD:
    importlib.import_module(name)
shadow, custom = sys.argv[1:3]
redis_folder = os.path.dirname(os.path.dirname(sys.modules["redis"].__file__))
print(json.dumps([zygote._resolves_the_same(sys.path), zygote._resolves_the_same([*sys.path, custom + "-none"]),
                  zygote._resolves_the_same([shadow, *sys.path]), zygote._resolves_the_same([custom, *sys.path]),
                  zygote._resolves_the_same([entry for entry in sys.path if entry != redis_folder])]))
"""


def test_a_fork_keeps_what_it_imported_only_where_a_fresh_start_would_import_the_same(tmp_path):
    """A folder that shadows a module already imported, a sitecustomize first, a path without the folder a
    module came from: each would import another file, so the fork starts afresh there; an empty folder added is
    no reason to."""
    (tmp_path / "shadow").mkdir()
    (tmp_path / "shadow" / "redis.py").write_text("")
    (tmp_path / "custom").mkdir()
    (tmp_path / "custom" / "sitecustomize.py").write_text("")
    result = subprocess.run([zygote.sys.executable, "-c", _RESOLVES, str(tmp_path / "shadow"), str(tmp_path / "custom")],
                            capture_output=True, text=True, timeout=60)
    assert json.loads(result.stdout or "null") == [True, True, False, False, False], result.stderr[-2000:]


@pytest.mark.stack
def test_a_fork_that_would_import_another_file_starts_afresh(waiting, rig, start_worker, celery_client, queue_name,
                                                             tmp_path):
    """A worker started in a folder that holds a sitecustomize is its zygote's child, running a fresh interpreter."""
    (tmp_path / "sitecustomize.py").write_text("")
    worker = start_worker([queue_name], [], cwd=tmp_path)
    master = worker.proc.pid
    assert isinstance(worker.proc, zygote.Forked), "the worker was not asked of the zygote"
    assert process.pid_argv(master) == worker.argv, f"the worker runs as forked: {process.pid_argv(master)}"


LAUNCH_SCRIPT = """set -eu
"$PYTHON" -m celery -A kontor.celery_app worker -Q "$QUEUE" -n "launched-$$@budgetlab" -c 1 -l INFO \\
    --without-mingle --without-gossip --without-heartbeat &
wait -n
"""


def _launched(rig, tmp_path, queue_name):
    """A launch script's worker, started as lab 1 starts entrypoint.sh: the script, its interpreter and the fork."""
    (tmp_path / "launch.sh").write_text(LAUNCH_SCRIPT)
    tree = rig.start_worker([queue_name], [], argv=["bash", str(tmp_path / "launch.sh")],
                            extra_env={"PYTHON": zygote.python(), "QUEUE": queue_name})
    launcher = next(pid for pid in process.descendants(tree.proc.pid) if "--as-python" in process.pid_argv(pid))
    (master,) = zygote.forked_by({launcher})
    return tree, launcher, master


@pytest.mark.stack
def test_a_launch_scripts_worker_is_forked_found_with_its_tree_and_stopped_through_its_interpreter(
        waiting, rig, tmp_path, queue_name):
    """`$PYTHON -m celery` in a launch script forks the master; the tree holds it; its command line reads as asked;
    SIGTERM to its interpreter stops it warm, and the script reads its exit status."""
    tree, launcher, master = _launched(rig, tmp_path, queue_name)
    assert process.parent_pid(master) == waiting.proc.pid, "the master was not forked from the zygote"
    assert master in tree.pids(), "the tree does not hold the forked master"
    assert zygote.argv_of(master)[2:4] == ["celery", "-A"], zygote.argv_of(master)
    os.kill(launcher, signal.SIGTERM)
    assert tree.proc.wait(timeout=20) == 0, tree.text()[-2000:]
    assert "Warm shutdown" in tree.text() or "warm shutdown" in tree.text(), tree.text()[-2000:]
    assert not process.pid_alive(master), "the master outlived its warm shutdown"


@pytest.mark.stack
def test_a_launched_fork_dies_with_its_interpreter(waiting, rig, tmp_path, queue_name):
    """SIGKILL to the interpreter the script ran kills the fork standing behind it, as it would kill the master."""
    tree, launcher, master = _launched(rig, tmp_path, queue_name)
    os.kill(launcher, signal.SIGKILL)
    assert tree.proc.wait(timeout=20) == 128 + signal.SIGKILL
    deadline = time.monotonic() + 10
    while process.pid_alive(master) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not process.pid_alive(master), "the fork outlived the interpreter that stood for it"
