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

from budgetlab.stack.process import pid_alive

# Each test starts and stops servers of its own, tens of seconds: not for `make test-quick`.
pytestmark = pytest.mark.stack


def budgetlab(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    variables = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
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
    from budgetlab.stack.postgres import install_dir
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
    copy = outside_copy("pginstall", install_dir())
    assert not copy.exists() or running_from(copy), "an unused copy of the binaries was left under /tmp"
    suite = stack.servers()["postgres"]
    if not suite.external and suite.running:
        program = pid_cmdline(suite.pid).split()[0]
        assert Path(program).exists(), f"the suite's own PostgreSQL lost its binaries: {program}"


def test_up_then_down_leaves_no_process(private_stack):
    """After stack down, neither postgres nor redis of that stack is left running."""
    up = budgetlab(private_stack, "stack", "up")
    assert up.returncode == 0, up.stderr
    pids = [state(private_stack)[kind]["pid"] for kind in ("postgres", "redis")]
    assert all(pid_alive(pid) for pid in pids)
    status = budgetlab(private_stack, "stack", "status")
    assert status.returncode == 0 and "PostgreSQL" in status.stdout and "16." in status.stdout
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
    """A virtualenv under a 0700 folder: the PostgreSQL binaries still run as the unprivileged account."""
    import shutil

    from budgetlab.stack import postgres
    from budgetlab.stack.unprivileged import reachable_binaries, server_account

    install = postgres.install_dir()
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    fake_site = private / "site-packages"
    shutil.copytree(install, fake_site / "pgserver" / "pginstall", symlinks=True)
    shutil.copytree(install.parent.parent / "pgserver.libs", fake_site / "pgserver.libs", symlinks=True)
    account = server_account()
    usable = reachable_binaries(fake_site / "pgserver" / "pginstall", account)
    try:
        result = subprocess.run([str(usable / "bin" / "postgres"), "--version"], preexec_fn=account.preexec(),
                                capture_output=True, text=True)
        assert result.returncode == 0 and "16." in result.stdout, result.stderr
    finally:
        if usable != fake_site / "pgserver" / "pginstall":
            shutil.rmtree(usable.parent.parent)


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
        cmdline = Path(f"/proc/{recorded[kind]['pid']}/cmdline").read_bytes().decode()
        assert secrets[kind] not in cmdline, f"the {kind} password shows in its command line"
    status = budgetlab(private_stack, "stack", "status")
    assert status.returncode == 0 and not any(secret in status.stdout for secret in secrets.values())
