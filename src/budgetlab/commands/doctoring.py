"""`budgetlab doctor`: check everything the workshop needs and say what to do about each problem."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rich.console import Console

from budgetlab.stack.process import pid_alive

PINNED_CELERY = "5.6.3"


def diagnose(console: Console) -> list[str]:
    """Print one line per check; return the problems found."""
    problems: list[str] = []

    def report(ok: bool, what: str, fix: str = "") -> None:
        console.print(f"  {'[green]ok[/]  ' if ok else '[red]fail[/]'} {what}" + ("" if ok else f"\n        → {fix}"))
        if not ok:
            problems.append(what)

    from budgetlab import advice
    from budgetlab.paths import display_path

    version = sys.version_info
    interpreter = display_path(Path(sys.executable))
    report(advice.supported(), f"Python {version.major}.{version.minor}.{version.micro} ({interpreter})",
           advice.missing("python"))
    import celery

    report(celery.__version__ == PINNED_CELERY, f"Celery {celery.__version__}",
           f"lab 1 teaches Celery {PINNED_CELERY}'s precedence; run 'make workshop' to reinstall the pinned version")
    from budgetlab.errors import BudgetlabError
    from budgetlab.inworker import clock

    try:
        report(True, clock.describe())
    except BudgetlabError as exc:
        report(False, "lab clock", str(exc))
    _check_stack(report)
    _check_stale_workers(report)
    console.print("[green]all good[/]" if not problems else f"[red]{len(problems)} problem(s)[/]")
    return problems


def _check_programs(report) -> None:
    """Say which server programs `stack up` starts for an embedded server, or what to install."""
    from budgetlab import stack
    from budgetlab.errors import BudgetlabError
    from budgetlab.stack import binaries

    for server in stack.servers().values():
        if server.external:
            continue
        name = "PostgreSQL" if server.kind == "postgres" else "Redis"
        try:
            program = (binaries.find_postgres if server.kind == "postgres" else binaries.find_redis)()
        except BudgetlabError as exc:
            report(False, f"{name} server program", str(exc))
            continue
        report(True, f"{name} {program.version_text} for the stack: {binaries.describe(program.record())}")


def _check_stack(report) -> None:
    from budgetlab import stack

    _check_programs(report)
    for server in stack.servers().values():
        info = stack.describe(server)
        name = "PostgreSQL" if server.kind == "postgres" else "Redis"
        where = "external" if server.external else "embedded"
        if not info["running"]:
            if not server.external and server.url and not _recorded_port_free(server):
                report(False, f"{name}'s recorded port is taken by another program",
                       "'budgetlab stack up' will move it to a free port")
            fix = ("check DATABASE_URL/REDIS_URL and that the server answers" if server.external
                   else "start it with 'budgetlab stack up' (or 'make workshop')")
            report(False, f"{name} ({where}) is not answering", fix)
            continue
        report(True, f"{name} {info['version']} ({where}) at {info['url']}")
        if not server.external:
            report(info["password"], f"{name} admits only the stack's password (in .budgetlab/secrets.json, "
                   "readable by your account only)",
                   "it was started before the stack had passwords: 'budgetlab stack down', then 'budgetlab stack up'")
        if server.kind == "postgres" and not server.external:
            report(_lab_role_is_plain(server.url), f"lab code connects as role '{stack.LAB_ROLE}', which owns the "
                   "workshop's tables and is no superuser", "run 'budgetlab stack up' to create the role")
        if not server.external and not _port_is_ours(server):
            report(False, f"{name}'s port is used by another program", "run 'budgetlab stack down' then 'budgetlab stack up'")
        if server.kind == "postgres":
            major = int(info["version"].split(".")[0])
            report(major >= 15, f"PostgreSQL {major} has stats_fetch_consistency",
                   "lab 5 needs PostgreSQL 15 or newer; use the embedded stack (unset DATABASE_URL)")
            if major >= 15:
                value = _stats_fetch_consistency(server.url)
                report(value == "cache", f"stats_fetch_consistency = {value}",
                       "lab 5 expects the server default 'cache'; remove the setting from the server's configuration")


def _recorded_port_free(server) -> bool:
    from urllib.parse import urlsplit

    from budgetlab.stack.process import port_is_free

    return port_is_free(urlsplit(server.url).port)


def _port_is_ours(server) -> bool:
    """Tell whether the server's port is held by the server's own process tree."""
    from urllib.parse import urlsplit

    port = urlsplit(server.url).port
    try:
        import psutil  # optional: only for the ownership check
    except ImportError:
        return True
    for conn in psutil.net_connections("tcp"):
        if conn.laddr and conn.laddr.port == port and conn.status == "LISTEN":
            owner = conn.pid
            return owner is None or owner == server.pid or (psutil.Process(owner).ppid() == server.pid)
    return False


def _stats_fetch_consistency(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        return conn.execute("SHOW stats_fetch_consistency").fetchone()[0]


def _orphaned(pid: int) -> bool:
    """Whether a worker's launcher died: it was adopted by init or a subreaper, and nothing will ever stop it.

    An owned worker's parent is the budgetlab process that started it (this
    checkout's interpreter) or, for a launch script's masters, the script,
    which shares the worker's session.
    """
    from budgetlab.stack.process import parent_pid, session_id

    parent = parent_pid(pid)
    if parent is None or parent == 1:
        return True
    return session_id(parent) != session_id(pid) and not _of_this_checkout(parent)




def _of_this_checkout(pid: int) -> bool:
    """Whether a process runs this checkout's interpreter: another checkout's workers are that checkout's business."""
    from budgetlab.paths import repo_root
    from budgetlab.stack.process import pid_cmdline

    program = pid_cmdline(pid).split(" ", 1)[0]
    if "/" not in program:  # found on PATH, not named by a path: nothing says whose it is
        return False
    if Path(program).is_absolute():
        path = Path(program)
    else:
        try:
            path = Path(os.readlink(f"/proc/{pid}/cwd")) / program
        except OSError:  # no /proc (macOS): a relative program's folder is unknown
            return False
    ours = {Path(sys.executable).absolute(), Path(sys.executable).resolve()}
    return path in ours or Path(os.path.normpath(path)).is_relative_to(repo_root())


def leftover_workers() -> list[int]:
    """Return the PIDs of this checkout's Celery workers that no budgetlab process owns any more."""
    from budgetlab.stack.process import all_pids, pid_cmdline

    found = []
    for pid in all_pids():
        if pid_alive(pid):
            line = pid_cmdline(pid)
            if ("celery" in line and "kontor.celery_app" in line and "worker" in line and _orphaned(pid)
                    and _of_this_checkout(pid)):
                found.append(pid)
    return sorted(found)


def _check_stale_workers(report) -> None:
    stale = leftover_workers()
    report(not stale, "no stale Celery workers from an earlier run" if not stale
           else f"stale workers of this checkout: {stale}",
           f"stop them with 'kill {' '.join(map(str, stale))}'" if stale else "")


def _lab_role_is_plain(url: str) -> bool:
    import psycopg

    from budgetlab import stack

    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [stack.LAB_ROLE]).fetchone()
    except psycopg.Error:
        return False
    return row is not None and not row[0]
