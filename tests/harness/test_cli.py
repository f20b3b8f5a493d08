"""The learner's loop through the real CLI, on a one-lab sample workshop and the real stack."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetlab.stack.process import pid_alive

TALLY = "labs/lab1_sample/tally.py"


def scratch_databases() -> list:
    """Return (name, owner) for every scratch database on the stack's PostgreSQL."""
    import psycopg

    from budgetlab import stack
    from budgetlab.harness import database

    with psycopg.connect(stack.database_url("postgres")) as conn:
        rows = conn.execute("SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database").fetchall()
    return [(name, database.Owner.parse(mark)) for name, mark in rows
            if mark and mark.startswith("budgetlab:scratch") and database.Owner.parse(mark)]


def worker_pids_for(root: Path) -> list[int]:
    """Return live celery workers whose code comes from this sample tree."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"celery" in cmdline and str(root).encode() in environ and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def test_list_shows_labs_with_status_and_timebox(cli):
    """list names each lab with its status and timebox."""
    result = cli("list")
    assert result.returncode == 0
    assert "Count every number" in result.stdout and "not started" in result.stdout and "5 min" in result.stdout


def test_check_fails_on_the_starter_and_passes_on_the_solution(cli):
    """check exits 1 with the symptom on the starter, 0 on the solution, and records progress."""
    failing = cli("check", "1")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert failing.stdout.startswith("checking lab 1")
    assert "came back 8" in failing.stdout and "1 of 2 hidden checks passed" in failing.stdout
    assert "def test_" not in failing.stdout and "assert " not in failing.stdout
    passing = cli("check", "1", "--target", "solutions")
    assert passing.returncode == 0 and "2 of 2 hidden checks passed" in passing.stdout
    progress = json.loads((cli.state / "progress.json").read_text())
    assert progress["labs"]["1"]["attempts"] == 1 and progress["labs"]["1"]["status"] == "failing"
    assert not worker_pids_for(cli.root)


def test_fixing_the_file_makes_check_pass_and_unlocks_the_solution(cli):
    """After the learner's fix, check passes, list says passed, and solution shows the diff."""
    refused = cli("solution", "1")
    assert refused.returncode == 2 and "has not passed yet" in refused.stderr
    path = cli.root / TALLY
    path.write_text(path.read_text().replace("sum(n for n in numbers if n > 0)", "sum(numbers)"))
    assert cli("check", "1").returncode == 0
    assert "passed" in cli("list").stdout
    diff = cli("solution", "1")
    assert diff.returncode == 0 and "--- labs/lab1_sample/tally.py" in diff.stdout
    assert path.read_text().count("sum(numbers)") == 1, "solution must never write into labs/"


def test_hints_come_one_at_a_time_and_are_remembered(cli):
    """hint shows hint 1, then 2, then 3, and stays on the last."""
    shown = [cli("hint", "1").stdout for _ in range(4)]
    assert "hint 1 of 3" in shown[0] and "hint 2 of 3" in shown[1] and "hint 3 of 3" in shown[2]
    assert "hint 3 of 3" in shown[3] and "last hint" in shown[3]


def test_reset_backs_up_then_restores(cli):
    """reset --yes keeps the learner's file in a backup and restores the starter."""
    path = cli.root / TALLY
    path.write_text("# my attempt\n")
    result = cli("reset", "1", "--yes")
    assert result.returncode == 0, result.stderr
    assert "sum(n for n in numbers if n > 0)" in path.read_text()
    backups = list((cli.state / "backups").rglob("tally.py"))
    assert len(backups) == 1 and backups[0].read_text() == "# my attempt\n"


def test_reset_without_git_is_one_line_and_keeps_the_file(cli, tmp_path):
    """With no git to read the starters from (a bare container), reset says so and touches nothing."""
    path = cli.root / TALLY
    path.write_text("# my attempt\n")
    result = cli("reset", "1", "--yes", env={"PATH": str(tmp_path)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: git is not installed; the starter files are restored from the git checkout"
    assert path.read_text() == "# my attempt\n"


def test_reset_asks_first(cli):
    """Without --yes, reset asks, and 'n' changes nothing."""
    path = cli.root / TALLY
    path.write_text("# keep me\n")
    result = cli("reset", "1", input="n\n")
    assert result.returncode == 1 and path.read_text() == "# keep me\n"


def test_report_formats_and_cohort_merge(cli, tmp_path):
    """report prints md, json and csv; --merge builds one table from several learners' files."""
    cli("hint", "1")
    assert "| learner | lab |" in cli("report").stdout
    assert cli("report", "--format", "csv").stdout.startswith("learner,lab,title")
    mine = json.loads(cli("report", "--format", "json").stdout)
    other = {**mine, "rows": [{**row, "learner": "ada"} for row in mine["rows"]]}
    (tmp_path / "a.json").write_text(json.dumps(mine))
    (tmp_path / "b.json").write_text(json.dumps(other))
    merged = cli("report", "--merge", str(tmp_path / "a.json"), "--merge", str(tmp_path / "b.json"))
    assert merged.returncode == 0 and "| ada |" in merged.stdout
    (tmp_path / "bad.json").write_text("{")
    bad = cli("report", "--merge", str(tmp_path / "bad.json"))
    assert bad.returncode == 2 and "is not a 'budgetlab report --format json' file" in bad.stderr


def test_corrupt_progress_file_is_backed_up_with_a_warning(cli):
    """A corrupt progress.json never crashes the CLI."""
    cli.state.mkdir(parents=True, exist_ok=True)
    (cli.state / "progress.json").write_text("{not json")
    result = cli("list")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "progress file was unreadable" in result.stderr
    assert list(cli.state.glob("progress.corrupt-*.json"))


def test_unknown_lab_is_one_line_and_exit_2(cli):
    """check 9 says which labs exist."""
    result = cli("check", "9")
    assert result.returncode == 2 and result.stderr.strip() == "error: there is no lab 9; the labs are 1"


def test_run_with_an_unknown_target_is_one_line_and_exit_2(cli):
    """run --target names what it accepts, and a failed start does not count as starting the lab."""
    result = cli("run", "1", "--target", "nowhere")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == "error: target 'nowhere' is neither 'labs', 'solutions' nor a folder"
    assert "not started" in cli("list").stdout


def test_syntax_error_in_learner_file_cannot_be_graded(cli):
    """A learner file that does not parse: exit 2, file and line named, no worker started."""
    path = cli.root / TALLY
    path.write_text(path.read_text() + "\ndef broken(:\n")
    result = cli("check", "1")
    assert result.returncode == 2
    assert "tally.py:" in result.stderr and "syntax error" in result.stderr and "Traceback" not in result.stderr
    assert not worker_pids_for(cli.root)


def test_modified_grader_files_refuse_to_grade(cli):
    """Editing a hidden check makes check exit 2 with 'grader files modified'."""
    grader = cli.root / "tests" / "lab1_sample" / "test_tally.py"
    grader.write_text(grader.read_text().replace("== 6", "!= 6"))
    result = cli("check", "1")
    assert result.returncode == 2 and "grader files modified" in result.stderr


def test_stack_down_cannot_grade(cli, tmp_path):
    """With no stack running, check exits 2 and says how to start it."""
    result = cli("check", "1", env={"BUDGETLAB_ROOT": str(tmp_path / "nowhere")})
    assert result.returncode == 2 and "budgetlab stack up" in result.stderr


def test_a_task_that_kills_its_worker_leaves_nothing_behind(cli):
    """A learner task that SIGKILLs its own worker child is a failed check with a symptom, and no orphans."""
    path = cli.root / TALLY
    path.write_text(path.read_text().replace("    # TODO: negative numbers count too.\n",
                                             "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n"))
    result = cli("check", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout
    assert not worker_pids_for(cli.root)


def test_ctrl_c_during_check_stops_every_worker(cli):
    """Ctrl-C while a check runs: exit 130 and no worker process left."""
    path = cli.root / TALLY
    path.write_text(path.read_text().replace("    # TODO: negative numbers count too.\n",
                                             "    import time\n    time.sleep(10 ** 7)\n"))
    env = dict(os.environ, BUDGETLAB_LABS_ROOT=str(cli.root), BUDGETLAB_STATE_DIR=str(cli.state))
    alive_before = {owner.pid for _name, owner in scratch_databases() if not owner.gone()}
    proc = subprocess.Popen([sys.executable, "-m", "budgetlab.cli_entry", "check", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 30
    while not worker_pids_for(cli.root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert worker_pids_for(cli.root), "no worker started"
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends to the foreground group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert not worker_pids_for(cli.root)
    left = [name for name, owner in scratch_databases() if owner.pid not in alive_before and owner.gone()]
    assert not left, f"Ctrl-C left scratch databases behind: {left}"


def test_every_command_has_one_line_help(cli):
    """Each command and option of the CLI carries a help text."""
    import typer.main

    from budgetlab.cli import app

    group = typer.main.get_command(app)
    missing = []

    def walk(command, path):
        if not (command.help or "").strip() and path:
            missing.append(" ".join(path))
        for param in getattr(command, "params", []):
            if getattr(param, "help", None) is not None and not param.help.strip():
                missing.append(f"{' '.join(path)} {param.name}")
            if param.param_type_name == "option" and not getattr(param, "help", None) and param.name != "help":
                missing.append(f"{' '.join(path)} --{param.name}")
            if param.param_type_name == "argument" and not getattr(param, "help", None):
                missing.append(f"{' '.join(path)} {param.name}")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(group, [])
    assert not missing, f"commands or options without help: {missing}"


def test_watch_checks_again_after_a_save_and_stops_cleanly(cli):
    """watch checks at once, again after the file is saved, and Ctrl-C leaves no worker."""
    env = dict(os.environ, BUDGETLAB_LABS_ROOT=str(cli.root), BUDGETLAB_STATE_DIR=str(cli.state))
    proc = subprocess.Popen([sys.executable, "-m", "budgetlab.cli_entry", "watch", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    import queue
    import threading

    lines: queue.Queue = queue.Queue()
    output = []
    # A reader thread, so a watch that prints nothing fails the test instead of hanging it.
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()

    def read_until(text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            output.append(line)
            if text in line:
                return
        raise AssertionError(f"watch never printed {text!r}: {''.join(output)[-1500:]}")

    try:
        read_until("1 of 2 hidden checks passed")
        path = cli.root / TALLY
        path.write_text(path.read_text().replace("sum(n for n in numbers if n > 0)", "sum(numbers)"))
        read_until("2 of 2 hidden checks passed")
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
    assert not worker_pids_for(cli.root)


def add_grader(cli, name: str, source: str) -> None:
    """Add a hidden check to the sample workshop and record its hash, as a maintainer would."""
    from budgetlab import integrity

    (cli.root / "tests" / "lab1_sample" / name).write_text(source)
    integrity.write(cli.root)


def test_failures_seen_before_a_check_that_cannot_grade_stay_failures(cli):
    """A check that cannot grade after others failed is listed beside them: exit 1, never 'could not grade'."""
    add_grader(cli, "test_zz_later.py", 'from budgetlab.harness.grading import CouldNotGrade\n\n\n'
               'def test_later():\n    """A later check whose plan cannot be played."""\n'
               '    raise CouldNotGrade("the plan could not be played")\n')
    result = cli("check", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "came back 8" in result.stdout and "could not grade: the plan could not be played" in result.stdout
    assert "1 of 3 hidden checks passed" in result.stdout, result.stdout
    log = (cli.state / "logs" / "check-1.log").read_text()
    assert "came back 8" in log and "def test_" not in log, log


BUSY_GRADER = '''from budgetlab.harness.grading import MachineBusy
from budgetlab.inworker import clock


def test_timed():
    """A check the machine lets time the code only on a clock at most {fastest:g} times faster than production."""
    if 1 / clock.factor() > {fastest:g}:
        raise MachineBusy("run 3 waited 40 s for a core while it ran (is the machine very busy?)")
'''


@pytest.mark.parametrize("graded", [True, False], ids=["graded on the slower clock", "busy on both"])
def test_a_check_the_machine_kept_from_timing_is_graded_again_on_a_slower_clock(cli, graded):
    """Every symptom the machine's (MachineBusy): the lab is graded once more on a slower clock, and that counts."""
    from budgetlab.commands.checking import SLOWER
    from budgetlab.inworker.clock import DEFAULT_FACTOR

    times, slower_times = 1 / DEFAULT_FACTOR, 1 / (DEFAULT_FACTOR * SLOWER)
    toml = cli.root / "tests" / "labs.toml"
    # A story whose workers run on the workshop's clock, as labs 2 to 4 do.
    toml.write_text(toml.read_text() + 'story = "budgetlab.stories.lab4"\n')
    add_grader(cli, "test_aa_busy.py", BUSY_GRADER.format(fastest=slower_times if graded else slower_times / 2))
    result = cli("check", "1", "--target", "solutions", env={"BUDGETLAB_CLOCK": ""})
    assert result.returncode == (0 if graded else 2), result.stdout + result.stderr
    lines = result.stdout.splitlines()[1:]  # after "checking lab 1 (...) against ..."
    said = "run 3 waited 40 s for a core while it ran (is the machine very busy?)"
    assert lines[0] == f"could not grade on a clock {times:,.0f} times faster than production: {said}", result.stdout
    assert lines[1] == f"grading again on one {slower_times:,.0f} times faster", result.stdout
    assert lines[-1] == ("3 of 3 hidden checks passed" if graded else f"could not grade: {said}"), result.stdout
