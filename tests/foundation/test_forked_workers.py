"""A worker forked from a check's zygote is the worker a fresh interpreter would be: its environment, session, exits."""

import json
import os
import signal
import subprocess
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
    (tmp_path / "startup.json").write_text(json.dumps({**zygote._startup(env, os.getcwd()), "pid": os.getpid(),
                                                       "imports": list(zygote.PRELOAD)}))
    return {zygote.SOCKET_VARIABLE: str(tmp_path / "socket")}


def test_only_a_worker_with_the_zygotes_start_up_is_forked(tmp_path, monkeypatch):
    """Another clock, another Python, a gevent pool or a folder that shadows what it imported: started fresh."""
    env = {"PYTHONPATH": "/boot:/target", "BUDGETLAB_CLOCK": "0.005", "PYTHONUNBUFFERED": "1", "KONTOR_X": "1"}
    for name, value in _startup_folder(tmp_path, env).items():
        monkeypatch.setenv(name, value)
    celery = [zygote.sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker"]
    assert zygote.usable(celery, {**env, "KONTOR_X": "2"}, None)
    assert zygote.usable(celery, {**env, "PYTHONPATH": f"/boot:/target:{tmp_path}"}, None)
    assert not zygote.usable(celery, {**env, "BUDGETLAB_CLOCK": "0.04"}, None)
    assert not zygote.usable(celery, {**env, "PYTHONHASHSEED": "0"}, None)
    assert not zygote.usable(celery, {**env, "PYTHONPATH": "/boot"}, None)
    assert not zygote.usable(["/other/python", *celery[1:]], env, None)
    assert not zygote.usable([*celery, "-P", "gevent"], env, None)
    assert not zygote.usable(["bash", "entrypoint.sh"], env, None)
    assert not zygote.usable(celery, env, tmp_path / "elsewhere")
    shadow = tmp_path / "shadow"
    (shadow / "redis").mkdir(parents=True)
    assert not zygote.usable(celery, {**env, "PYTHONPATH": f"/boot:/target:{shadow}"}, None)
    (tmp_path / "custom").mkdir()
    (tmp_path / "custom" / "sitecustomize.py").write_text("")
    assert not zygote.usable(celery, {**env, "PYTHONPATH": f"/boot:/target:{tmp_path / 'custom'}"}, None)
    monkeypatch.delenv(zygote.SOCKET_VARIABLE)
    assert not zygote.usable(celery, env, None)
