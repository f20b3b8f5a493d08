"""The embedded PostgreSQL 16 server, run from the pgserver wheel's binaries."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.stack import process, secrets
from budgetlab.stack.unprivileged import Account, outside_copy, reachable_binaries, reachable_home, server_account

SUPERUSER = "budgetlab"
# Written after initdb succeeded; a data folder without it was left half-made.
INIT_MARKER = "budgetlab-initdb-complete"
# Loopback TCP only (no Unix socket is opened), and only with the stack's password:
# other local users of a shared machine can reach the port, not the data.
HBA = "# Written by budgetlab.\nhost all all 127.0.0.1/32 scram-sha-256\n"

# Speed over durability: the data is a workshop's and is re-seeded at will.
SERVER_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "unix_socket_directories": "",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
}


def install_dir() -> Path:
    """Return the folder of PostgreSQL binaries shipped inside the pgserver wheel."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise BudgetlabError("the pgserver wheel is not installed; run 'make workshop' to set up .venv")
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (install / "bin" / "postgres").exists():
        raise BudgetlabError(f"no PostgreSQL binaries in {install}; reinstall with 'make clean-venv workshop'")
    return install


def data_dir(state: Path, account: Account) -> Path:
    return reachable_home(state / "pgdata", account, "pgdata")


def outside_copies(state: Path) -> list[Path]:
    """Return the folders under /tmp that hold this checkout's data and binaries, when it needed them."""
    folders = [outside_copy("pgdata", state / "pgdata")]
    try:
        folders.append(outside_copy("pginstall", install_dir()))
    except BudgetlabError:
        pass  # no wheel, so no copy of its binaries either
    return [folder for folder in folders if folder.exists()]


def _run_as(account: Account, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, preexec_fn=account.preexec(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


def _env(account: Account, install: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    libraries = [install / "lib", install.parent.parent / "pgserver.libs"]
    env.update(HOME=account.home, LC_ALL="C", LANG="C",
               LD_LIBRARY_PATH=os.pathsep.join(str(p) for p in libraries if p.is_dir()))
    return env


def _prepare_data_dir(pgdata: Path, account: Account, install: Path, password: str) -> None:
    """Initialise the data folder, replacing one that an interrupted initdb left behind."""
    if (pgdata / INIT_MARKER).exists():
        return
    if pgdata.exists():
        shutil.rmtree(pgdata)
    pgdata.mkdir(mode=0o700, parents=True)
    os.chown(pgdata, account.uid, account.gid)
    fd, pwfile = tempfile.mkstemp(prefix="budgetlab-pw-")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(password + "\n")
        os.chown(pwfile, account.uid, account.gid)  # initdb runs as the server's account
        result = _run_as(account, [str(install / "bin" / "initdb"), "-D", str(pgdata), "-U", SUPERUSER,
                                   "--auth=scram-sha-256", f"--pwfile={pwfile}", "--encoding=UTF8",
                                   "--locale=C", "--no-sync"],
                         _env(account, install))
    finally:
        os.unlink(pwfile)
    if result.returncode != 0:
        last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise BudgetlabError(f"initdb failed in {pgdata}: {last[0]}")
    (pgdata / INIT_MARKER).write_text("ok\n")
    _write_hba(pgdata, account)


def _write_hba(pgdata: Path, account: Account) -> None:
    path = pgdata / "pg_hba.conf"
    path.write_text(HBA)
    os.chown(path, account.uid, account.gid)


def _secure_legacy(url: str, password: str, pgdata: Path, account: Account) -> None:
    """Give a data folder from before passwords (trust for everyone on loopback) the stack's password."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(SUPERUSER), sql.Literal(password)))
        _write_hba(pgdata, account)
        conn.execute("SELECT pg_reload_conf()")


def _clear_stale_pidfile(pgdata: Path) -> None:
    """Remove a postmaster.pid whose process is gone or is no postgres (a killed run)."""
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        pidfile.unlink(missing_ok=True)
        return
    if not process.pid_alive(pid) or "postgres" not in process.pid_cmdline(pid):
        pidfile.unlink(missing_ok=True)
    elif str(pgdata) in process.pid_cmdline(pid):
        raise BudgetlabError(
            f"a PostgreSQL server (PID {pid}) already runs on {pgdata} but the stack did not record it; "
            f"stop it with 'kill {pid}' and retry"
        )


def start(state: Path, log: Path, port: int) -> dict:
    """Start PostgreSQL on 127.0.0.1:port and return its record for the state file."""
    account = server_account()
    install = reachable_binaries(install_dir(), account)
    pgdata = data_dir(state, account)
    password = secrets.password("postgres")
    _prepare_data_dir(pgdata, account, install, password)
    legacy = (pgdata / "pg_hba.conf").read_text() != HBA
    _clear_stale_pidfile(pgdata)
    argv = [str(install / "bin" / "postgres"), "-D", str(pgdata), "-p", str(port)]
    for key, value in SERVER_SETTINGS.items():
        argv += ["-c", f"{key}={value}"]
    log.touch()
    if not account.is_current:
        os.chown(log, account.uid, account.gid)
    proc = process.spawn(argv, log, env=_env(account, install), preexec=account.preexec())
    url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
    client = url if legacy else secrets.with_password(url, password)
    if not process.wait_until(lambda: _answers(client), timeout=30, alive=lambda: proc.poll() is None):
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no log output"]
        process.stop_pid(proc.pid)
        raise BudgetlabError(f"PostgreSQL did not start on port {port}: {tail[0]}")
    if legacy:
        _secure_legacy(url, password, pgdata, account)
    # The record holds no password; stack.servers() adds it from the secrets file.
    return {"pid": proc.pid, "port": port, "url": url, "data": str(pgdata), "auth": "password"}


def _answers(url: str) -> bool:
    import psycopg

    try:
        with psycopg.connect(url, connect_timeout=1):
            return True
    except psycopg.OperationalError:
        return False


def version(url: str) -> str:
    """Return the server's version string, such as '16.3'."""
    import psycopg

    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        return conn.execute("SHOW server_version").fetchone()[0].split()[0]


def stop(pid: int) -> None:
    """Stop the postmaster with a fast shutdown; its children leave with it."""
    import signal

    process.stop_pid(pid, signal.SIGINT, grace=15)
