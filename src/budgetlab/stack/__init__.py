"""The workshop's servers: start, stop and describe PostgreSQL and Redis.

By default both run embedded, as child processes of `budgetlab stack up` on
free loopback ports, from the programs `budgetlab.stack.binaries` finds (a
wheel's, or a server already installed). When DATABASE_URL or REDIS_URL is
set, that server is used instead and never started or stopped by the stack.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from budgetlab.errors import BudgetlabError
from budgetlab.harness import logcap
from budgetlab.paths import state_dir
from budgetlab.stack import binaries, postgres, process, redis, secrets, state

DEFAULT_DATABASE = "kontor"
# A server's log grows across starts; past this size the next start begins a new one and keeps one old.
LOG_ROTATE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Server:
    """One server as the stack sees it."""

    kind: str          # "postgres" or "redis"
    url: str           # where clients connect (for PostgreSQL, the maintenance database)
    pid: int | None    # set only for a server the stack started
    external: bool
    program: str = ""  # for a server the stack started: its program and where that came from
    source: str = ""

    @property
    def running(self) -> bool:
        return self.external or process.pid_alive(self.pid)


def _is_server(kind: str, entry: dict) -> bool:
    """Tell whether the recorded PID is still the server the stack started (not a process that reused the PID).

    Redis and Valkey rename their process ("redis-server 127.0.0.1:PORT"), so
    the program's name is looked for, not its path.
    """
    pid = entry.get("pid")
    if not process.pid_alive(pid):
        return False
    names = ("postgres",) if kind == "postgres" else binaries.REDIS_PROGRAMS
    if entry.get("program"):
        names = (Path(entry["program"]).name, *names)
    line = process.pid_cmdline(pid)
    return any(name in line for name in names)


def _external(kind: str) -> str | None:
    return os.environ.get("DATABASE_URL" if kind == "postgres" else "REDIS_URL") or None


def _maintenance_url(database_url: str) -> str:
    parts = urlsplit(database_url)
    return urlunsplit(parts._replace(path="/postgres"))


def database_name() -> str:
    """Return the workshop database's name (DATABASE_URL's, or 'kontor')."""
    url = _external("postgres")
    if url:
        name = urlsplit(url).path.lstrip("/")
        if name and name != "postgres":
            return name
    return DEFAULT_DATABASE


def servers() -> dict[str, Server]:
    """Return both servers from the environment and the state file, without starting anything."""
    recorded = state.load()
    found = {}
    for kind in ("postgres", "redis"):
        url = _external(kind)
        if url:
            if kind == "postgres":
                url = _maintenance_url(url)
            found[kind] = Server(kind, url, None, external=True)
        else:
            entry = recorded.get(kind) or {}
            url = entry.get("url", "")
            if url and entry.get("auth") == "password":
                url = secrets.with_password(url, secrets.password(kind))
            found[kind] = Server(kind, url, entry.get("pid"), external=False, program=entry.get("program", ""),
                                 source=entry.get("source", ""))
    return found


def database_url(name: str | None = None) -> str:
    """Return a URL for a database on the stack's PostgreSQL (the workshop's by default)."""
    server = require()["postgres"]
    parts = urlsplit(server.url)
    return urlunsplit(parts._replace(path="/" + (name or database_name())))


# The role lab code connects as on the embedded PostgreSQL: it owns the workshop's databases
# and their tables, and is not a superuser. On an external server, lab code uses DATABASE_URL's role.
LAB_ROLE = "kontor"


def lab_role() -> str | None:
    """Return the non-superuser role lab code connects as, or None when DATABASE_URL's role is used."""
    return None if require()["postgres"].external else LAB_ROLE


def lab_database_url(name: str | None = None) -> str:
    """Return the URL lab code (workers, Kontor's processes) uses for a database of the stack."""
    url = database_url(name)
    role = lab_role()
    return secrets.with_password(url, secrets.password("lab-role"), user=role) if role else url


def redis_url(db: int = 0) -> str:
    """Return a URL for a numbered database on the stack's Redis."""
    server = require()["redis"]
    parts = urlsplit(server.url)
    return urlunsplit(parts._replace(path=f"/{db}"))


def require() -> dict[str, Server]:
    """Return the servers, or fail with what to do when one is down."""
    found = servers()
    for server in found.values():
        if not server.external and not server.running:
            raise BudgetlabError(f"the {server.kind} server is not running; start the stack with 'budgetlab stack up'")
    return found


def fault() -> str | None:
    """Return one sentence naming a server that stopped or no longer answers, or None when both answer."""
    for server in servers().values():
        name = "PostgreSQL" if server.kind == "postgres" else "Redis"
        if not server.external and not server.running:
            return (f"{name} (PID {server.pid or '?'}) stopped while budgetlab was using it; "
                    "start it again with 'budgetlab stack up'")
        try:
            (postgres if server.kind == "postgres" else redis).version(server.url)
        except Exception:  # any driver error means the same to the person: it does not answer
            where = secrets.address(server.url)
            remedy = ("check that server, then try again" if server.external
                      else "restart the stack with 'budgetlab stack down' and 'budgetlab stack up'")
            return f"{name} at {where} stopped answering while budgetlab was using it; {remedy}"
    return None


def up() -> dict[str, Server]:
    """Start whatever is not running yet; a second call only checks."""
    root = state_dir()
    recorded = state.load()
    # Both programs are found before either server starts: a missing one is one line, with nothing left half up.
    programs = {kind: (binaries.find_postgres if kind == "postgres" else binaries.find_redis)()
                for kind in ("postgres", "redis")
                if not _external(kind) and not _is_server(kind, recorded.get(kind) or {})}
    for kind, module in (("postgres", postgres), ("redis", redis)):
        url = _external(kind)
        if url:
            # The embedded server's record stays: it may still run, and only `down` may stop it.
            _check_external(kind, url)
            continue
        if kind not in programs:
            continue
        entry = recorded.get(kind) or {}
        port = entry.get("port")
        if not port or not process.port_is_free(port):
            port = process.free_port()
        log = root / f"{kind}.log"
        if log.exists() and log.stat().st_size > LOG_ROTATE_BYTES:
            logcap.rotate(log)
        recorded[kind] = module.start(root, log, port, programs[kind])
        state.save(recorded)
    state.save(recorded)
    return servers()


def _check_external(kind: str, url: str) -> None:
    name = "DATABASE_URL" if kind == "postgres" else "REDIS_URL"
    where = secrets.address(url) or url
    try:
        if kind == "postgres":
            postgres.version(_maintenance_url(url))
        else:
            redis.version(url)
    except Exception as exc:  # any driver error means the same thing to the person: it does not answer
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BudgetlabError(f"{name} server at {where} does not answer: {reason}") from None


def down() -> list[str]:
    """Stop only the servers the stack started, by PID; return what was stopped."""
    recorded = state.load()
    stopped = []
    for kind, module in (("redis", redis), ("postgres", postgres)):
        entry = recorded.get(kind) or {}
        pid = entry.get("pid")
        if pid and _is_server(kind, entry):
            module.stop(pid)
            stopped.append(f"{kind} (PID {pid})")
        if entry:
            entry["pid"] = None
    state.save(recorded)
    return stopped


def remove_outside_copies() -> list[Path]:
    """Delete what this checkout's stack keeps under /tmp (data, binaries); return the folders removed.

    They exist only when the checkout lies out of the server account's reach
    (a clone in a private temp folder); nothing else removes them with it.
    """
    if any(server.running for server in servers().values() if not server.external):
        raise BudgetlabError("the stack is running; stop it first with 'budgetlab stack down'")
    removed = []
    for folder in postgres.outside_copies(state_dir()):
        # The binaries are shared by every stack of this venv (a test's private one runs beside the suite's).
        if process.running_from(folder):
            continue
        shutil.rmtree(folder)
        removed.append(folder)
    return removed


def describe(server: Server) -> dict:
    """Return what `stack status` shows for one server: version, URL, PID."""
    info = {"kind": server.kind, "url": secrets.without_password(server.url), "pid": server.pid,
            "external": server.external, "password": urlsplit(server.url).password is not None,
            "running": server.running, "version": None,
            "program": binaries.describe({"program": server.program, "source": server.source})}
    if server.url and server.running:
        try:
            info["version"] = (postgres if server.kind == "postgres" else redis).version(server.url)
        except Exception:  # a server that does not answer is shown as such, not as a crash
            info["running"] = False
    return info
