"""When lab code or the stack breaks grading itself, check says what broke in one sentence, exits 2 and records nothing."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from budgetlab.harness.logcap import HEAD_BYTES, TAIL_BYTES, CappedLog

from .test_cli import worker_pids_for

TALLY = "labs/lab1_sample/tally.py"


def break_tally(cli, text: str) -> None:
    path = cli.root / TALLY
    path.write_text(path.read_text() + text)


def recorded_checks(cli) -> list:
    """Return the graded attempts in the learner's progress file."""
    path = cli.state / "progress.json"
    labs = json.loads(path.read_text())["labs"] if path.exists() else {}
    return [entry for entry in labs.values() if entry.get("attempts")]


@pytest.mark.parametrize("code, said", [
    ("\nraise SystemExit(1)\n", "labs/lab1_sample/tally.py exited with status 1 while it was being imported"),
    ("\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
     "labs/lab1_sample/tally.py killed its own process with SIGKILL while it was being imported"),
    ("\nraise LookupError('no such category')\n",
     "labs/lab1_sample/tally.py raised an error at import: LookupError: no such category"),
], ids=["exits", "kills itself", "raises"])
def test_lab_code_that_dies_at_import_is_named_with_what_it_did(cli, code, said):
    """A learner file that exits, kills itself or raises at import: exit 1 (the code's doing) and one sentence naming
    the file, as the summary line; it is a graded attempt that failed (one failed check of one)."""
    break_tally(cli, code)
    result = cli("check", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert said in result.stdout.strip().splitlines()[-1], result.stdout
    assert said in result.stdout, result.stdout
    assert "hidden checks passed" not in result.stdout and "Traceback" not in result.stdout + result.stderr
    assert [(entry["passed"], entry["last_result"]) for entry in recorded_checks(cli)] == [(False, "0/1")]


@pytest.mark.slow
def test_lab_code_that_hangs_at_import_is_named_within_the_probe_time(cli):
    """A learner file that loops forever at import: exit 1 naming the file, long before the check's deadline."""
    break_tally(cli, "\nwhile True:\n    pass\n")
    started = time.monotonic()
    # 5 s instead of the 20 s a learner's check allows: the loop burns a core all the while.
    result = cli("check", "1", env={"BUDGETLAB_HANG_SECONDS": "5"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "labs/lab1_sample/tally.py hung at import: still importing after" in result.stdout, result.stdout
    assert time.monotonic() - started < 120


@pytest.mark.slow
def test_lab_code_stuck_in_a_task_is_named_within_the_labs_own_limits(cli):
    """A task that never returns: a failed check (exit 1) soon after the lab's hard limit, naming the file; no worker
    stays."""
    path = cli.root / TALLY
    path.write_text(path.read_text().replace("    # TODO: negative numbers count too.\n",
                                             "    import time\n    time.sleep(10 ** 7)\n"))
    started = time.monotonic()
    # The sample lab's hard limit is the default 900 s: 4.5 s on the lab clock, then 3 s of margin.
    # The task sleeps far longer on the same clock (ten million production seconds).
    result = cli("check", "1", env={"BUDGETLAB_STALL_MARGIN": "3"})
    assert result.returncode == 1, result.stdout + result.stderr
    assert "was still running" in result.stdout and "labs/lab1_sample/tally.py never returned" in result.stdout, \
        result.stdout
    assert "could not grade" not in result.stdout, result.stdout
    assert time.monotonic() - started < 60
    assert [entry["passed"] for entry in recorded_checks(cli)] == [False]
    assert not worker_pids_for(cli.root)


@pytest.fixture
def private_stack(tmp_path, cli):
    """A stack of its own for the sample workshop, so its servers may be killed; always taken down."""
    root = tmp_path / "stack-root"
    root.mkdir()
    env = {"BUDGETLAB_ROOT": str(root)}
    up = cli("stack", "up", env=env, timeout=300)
    assert up.returncode == 0, up.stdout + up.stderr
    yield env, json.loads((root / ".budgetlab" / "stack.json").read_text())
    cli("stack", "down", "--remove-copies", env=env)


@pytest.mark.slow
@pytest.mark.parametrize("server", ["redis", "postgres"])
def test_a_server_that_dies_during_check_is_named_and_nothing_is_recorded(cli, private_stack, server):
    """A server killed while a check runs: exit 2, one line naming it and how to restart, no score recorded."""
    env, recorded = private_stack
    # Keeps the check busy on its worker while the server goes.
    path = cli.root / TALLY
    path.write_text(path.read_text().replace("    # TODO: negative numbers count too.\n",
                                             "    import time\n    time.sleep(10 ** 7)\n"))
    variables = dict(os.environ, BUDGETLAB_LABS_ROOT=str(cli.root), BUDGETLAB_STATE_DIR=str(cli.state), **env)
    proc = subprocess.Popen([sys.executable, "-m", "budgetlab.cli_entry", "check", "1"], env=variables,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not worker_pids_for(cli.root) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert worker_pids_for(cli.root), "no worker started"
    os.kill(recorded[server]["pid"], signal.SIGKILL)
    out, err = proc.communicate(timeout=180)
    name = "Redis" if server == "redis" else "PostgreSQL"
    assert proc.returncode == 2, out + err
    assert f"{name} (PID {recorded[server]['pid']}) stopped while budgetlab was using it" in out, out
    assert "budgetlab stack up" in out and "hidden checks passed" not in out
    assert not recorded_checks(cli)
    assert not worker_pids_for(cli.root)


def test_a_log_keeps_its_head_and_tail_whatever_lab_code_prints(tmp_path):
    """Ten megabytes through a pipe: the kept log stays near a megabyte, with its first and last lines."""
    writer = subprocess.Popen([sys.executable, "-c",
                               "import sys\nprint('first line')\nsys.stdout.write('x' * 10_000_000)\nprint()\n"
                               "print('last line')"], stdout=subprocess.PIPE)
    log = CappedLog(tmp_path / "check-5.log")
    log.drain(writer.stdout)
    writer.wait()
    log.join()
    log.close()
    text = (tmp_path / "check-5.log").read_text()
    assert text.startswith("first line") and text.rstrip().endswith("last line")
    assert "bytes cut here" in text
    assert len(text) <= HEAD_BYTES + TAIL_BYTES + 65536 + 200
    again = CappedLog(tmp_path / "check-5.log")
    again.close()
    assert (tmp_path / "check-5.log.1").read_text() == text, "the previous log was not kept as .1"


def test_a_check_the_stack_cannot_serve_could_not_grade(cli):
    """A piece the stack owes a check (here a Redis database), however the check wrapped the error: exit 2, one line."""
    from .test_cli import add_grader

    add_grader(cli, "test_aa_owed.py", 'import pytest\n\nfrom budgetlab.errors import StackShortage\n\n\n'
               '@pytest.fixture\ndef owed():\n    try:\n'
               '        raise StackShortage("no Redis database on the test server can be used")\n'
               '    except StackShortage as exc:\n'
               '        raise RuntimeError("the broker could not be set up") from exc\n\n\n'
               'def test_owed(owed):\n    """A check that needs a Redis database of its own."""\n')
    result = cli("check", "1")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "could not grade: no Redis database on the test server can be used", \
        result.stdout
    assert "✗" not in result.stdout and not recorded_checks(cli)


def test_two_checks_of_one_lab_rotate_its_log_without_tripping_on_each_other(tmp_path):
    """Each check rotates check-N.log as it starts; two at once must not fail on the file the other just moved."""
    import threading

    errors = []

    def start_checks():
        for _ in range(300):
            try:
                CappedLog(tmp_path / "check-8.log").close()
            except OSError as exc:
                errors.append(exc)

    threads = [threading.Thread(target=start_checks) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]


@pytest.mark.stack  # preflight asks for the running stack
def test_a_stale_template_stops_the_graders_already_starting(sample_root, tmp_path, monkeypatch):
    """`check` reads the template's age while pytest starts: a stale one still ends in its one line, and the
    grading process already started is stopped, leaving no process behind."""
    from budgetlab import labs, targets
    from budgetlab.commands import checking
    from budgetlab.errors import BudgetlabError
    from budgetlab.harness import database, workers

    monkeypatch.setenv("BUDGETLAB_LABS_ROOT", str(sample_root))
    monkeypatch.setenv("BUDGETLAB_STATE_DIR", str(tmp_path / "state"))
    said = "the workshop's database was made by an older budgetlab or for other code"
    read = []

    def stale() -> None:
        read.append(os.getpid())
        raise BudgetlabError(said)

    monkeypatch.setattr(database, "require_current", stale)
    with pytest.raises(BudgetlabError, match=said):
        checking.grade(labs.get(1), targets.resolve("labs"))
    assert read == [os.getpid()]
    assert workers.tree_of(os.getpid()) == {os.getpid()}
