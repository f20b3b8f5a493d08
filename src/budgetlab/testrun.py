"""`make test`: bring the stack up, run the whole suite, and stop (and remove from /tmp) what this run started.

When this machine also runs PostgreSQL 15 on 5432 and Redis 7 on 6379,
the tests marked `external` run a second time against those servers, so
the labs are proven on both PostgreSQL versions.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from budgetlab import database, stack
from budgetlab.errors import BudgetlabError

MACHINE_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/kontor"
MACHINE_REDIS_URL = "redis://127.0.0.1:6379/0"


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _pytest(args: list[str], env: dict[str, str] | None = None) -> int:
    print(f"$ pytest {' '.join(args)}", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", *args], env=env)


def main(args: list[str]) -> int:
    before = {kind: server.running for kind, server in stack.servers().items()}
    try:
        stack.up()
        database.prepare()
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    started_here = [kind for kind, server in stack.servers().items() if not server.external and not before[kind]]
    try:
        code = _pytest(args)
        external_set = "DATABASE_URL" in os.environ or "REDIS_URL" in os.environ
        if code == 0 and not external_set and _answers(5432) and _answers(6379):
            env = dict(os.environ, DATABASE_URL=MACHINE_DATABASE_URL, REDIS_URL=MACHINE_REDIS_URL)
            print("\nsecond run: this machine's PostgreSQL 15 and Redis 7", flush=True)
            prepared = subprocess.call([sys.executable, "-m", "budgetlab.cli_entry", "stack", "up"], env=env)
            code = prepared or _pytest(["-m", "external", *args], env)
    finally:
        if started_here:
            stack.down()
            embedded = {kind for kind, server in stack.servers().items() if not server.external}
            # A clone in a private folder (CI's) needed copies under /tmp; they go with the run,
            # unless a stack of the workshop's own was running before and its data is not ours.
            if set(started_here) == embedded:
                try:
                    stack.remove_outside_copies()
                except BudgetlabError as exc:
                    print(f"warning: {exc}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
