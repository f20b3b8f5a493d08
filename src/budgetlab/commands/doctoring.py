"""`budgetlab doctor`: check everything the workshop needs and say what to do about each problem."""

from __future__ import annotations

import sys

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

    version = sys.version_info
    report((3, 11) <= version[:2] <= (3, 12), f"Python {version.major}.{version.minor}",
           "use Python 3.11 or 3.12: the PostgreSQL and Redis wheels stop at 3.12")
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


def _check_stack(report) -> None:
    from budgetlab import stack

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
    """A worker whose launcher died was adopted by init: nothing will ever stop it."""
    from budgetlab.stack.process import parent_pid

    return parent_pid(pid) == 1


def _check_stale_workers(report) -> None:
    from pathlib import Path

    from budgetlab.stack.process import pid_cmdline

    stale = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and pid_alive(int(entry.name)):
            line = pid_cmdline(int(entry.name))
            if "celery" in line and "kontor.celery_app" in line and "worker" in line and _orphaned(int(entry.name)):
                stale.append(int(entry.name))
    report(not stale, "no stale Celery workers from an earlier run" if not stale else f"stale workers: {stale}",
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
