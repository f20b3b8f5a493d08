"""`make test`: bring the stack up, run the whole suite, and stop (and remove from /tmp) what this run started.

Only when asked with BUDGETLAB_EXTERNAL=1 (as `.ci/run` does, on a machine
that provides them) do the tests marked `external` run a second time,
against the PostgreSQL and Redis named by BUDGETLAB_EXTERNAL_DATABASE_URL
and BUDGETLAB_EXTERNAL_REDIS_URL (by default this machine's PostgreSQL 15 on
5432 and Redis 7 on 6379), so the labs are proven on both PostgreSQL
versions. A server that merely answers on a port is never used unasked:
it may hold somebody's data.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys

from budgetlab import paths, stack
from budgetlab.errors import BudgetlabError
from budgetlab.harness import database
from budgetlab.stack import secrets

# The workshop database's name says whose it is, beside whatever else that server holds.
MACHINE_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/budgetlab_kontor"
MACHINE_REDIS_URL = "redis://127.0.0.1:6379/0"


def external_urls() -> dict[str, str] | None:
    """Return DATABASE_URL and REDIS_URL for the external pass, or None when nobody asked for one."""
    if os.environ.get("BUDGETLAB_EXTERNAL", "") not in ("1", "yes", "true"):
        return None
    return {"DATABASE_URL": os.environ.get("BUDGETLAB_EXTERNAL_DATABASE_URL", MACHINE_DATABASE_URL),
            "REDIS_URL": os.environ.get("BUDGETLAB_EXTERNAL_REDIS_URL", MACHINE_REDIS_URL)}


# Where the time goes: pytest's table of the slowest tests closes every pass.
DURATIONS = "--durations=15"
# pytest's exit code when no test was selected: a pass with nothing to run alone is a pass.
NO_TESTS = 5


def cores() -> int:
    return os.cpu_count() or 1


def side_by_side() -> int:
    """Return how many pytest-xdist processes run the tests: one per core and one more.

    BUDGETLAB_TEST_WORKERS overrides the number; 0 runs one process.

    Each live test has a rig of its own (database, Redis lease, queues,
    workers), so tests share the machine, never a resource. The tests that
    play a whole check fill one group per core (tests/conftest.py), each
    group in one process, test after test, so at most one check per core
    runs at a time; the one process more runs every other test meanwhile.
    With no process beyond the groups, those tests would wait for a group
    to end. Tests that share a costly session fixture stay in one process;
    the few marked `alone`, which need the servers to themselves, run by
    themselves afterwards.
    """
    raw = os.environ.get("BUDGETLAB_TEST_WORKERS", "")
    try:
        workers = int(raw) if raw else cores() + 1
    except ValueError:
        raise BudgetlabError(f"BUDGETLAB_TEST_WORKERS={raw!r} is not a number of processes") from None
    if workers < 0:
        raise BudgetlabError(f"BUDGETLAB_TEST_WORKERS={raw!r} is not a number of processes")
    return workers


def _pytest(args: list[str], env: dict[str, str] | None = None, marker: str = "") -> int:
    """Run one pass: side by side, then the `alone` tests by themselves (`marker` narrows both)."""
    workers = side_by_side()
    if workers == 0 or "-m" in args:
        return _pytest_once([*(["-m", marker] if marker else []), *args], env)
    within = f"({marker}) and " if marker else ""
    code = _pytest_once(["-n", str(workers), "--dist", "loadgroup", "-m", f"{within}not alone", *args], env)
    alone = _pytest_once(["-m", f"{within}alone", *args], env)
    return code or (0 if alone == NO_TESTS else alone)


def _pytest_once(args: list[str], env: dict[str, str] | None) -> int:
    args = [DURATIONS, *args]
    print(f"$ pytest {' '.join(args)}", flush=True)
    return subprocess.call([sys.executable, "-m", "pytest", *args], env=env)


# The workshop's packages, which every worker, check and command imports. Not the labs or the suite:
# tests copy and count those trees (the audit's fixtures), and a copy would carry the bytecode along.
SOURCES = ("src",)


def compile_sources() -> None:
    """Compile the checkout's Python once, before the suite starts its thousand-odd processes.

    A machine that sets PYTHONDONTWRITEBYTECODE (CI's does) would otherwise
    have every worker, check and command compile the same modules again;
    bytecode never changes what runs, and Python recompiles a file that
    changes afterwards.
    """
    for folder in SOURCES:
        compileall.compile_dir(paths.repo_root() / folder, quiet=2, workers=0)


def _hosts(urls: dict[str, str]) -> str:
    return ", ".join(f"{name} {secrets.address(url)}" for name, url in urls.items())


def main(args: list[str]) -> int:
    before = {kind: server.running for kind, server in stack.servers().items()}
    try:
        side_by_side()  # a bad BUDGETLAB_TEST_WORKERS is one line, before anything starts
        compile_sources()
        stack.up()
        database.prepare()
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    started_here = [kind for kind, server in stack.servers().items() if not server.external and not before[kind]]
    try:
        code = _pytest(args)
        external = external_urls()
        if code == 0 and external:
            env = dict(os.environ, **external)
            print(f"\nsecond run, as asked by BUDGETLAB_EXTERNAL: {_hosts(external)}", flush=True)
            prepared = subprocess.call([sys.executable, "-m", "budgetlab.cli_entry", "stack", "up"], env=env)
            code = prepared or _pytest(args, env, marker="external")
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
