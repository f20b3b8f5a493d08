"""budgetlab drops, rebuilds and empties only what it created, on embedded and external servers alike."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from budgetlab import stack
from budgetlab.errors import BudgetlabError
from budgetlab.harness import database

pytestmark = [pytest.mark.stack, pytest.mark.external]


def cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run the CLI with its own state folder and the given server URLs."""
    variables = dict(os.environ, BUDGETLAB_ROOT=str(root), **env)
    return subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], env=variables,
                          capture_output=True, text=True, timeout=300)


def admin():
    return psycopg.connect(stack.database_url("postgres"), autocommit=True)


@pytest.fixture
def someone_elses_database():
    """A database a person made by hand on the same server, with a customer in it; removed by this test only."""
    name = f"canary_app_{uuid.uuid4().hex[:8]}"
    with admin() as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(stack.database_url(name), autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers VALUES (1, 'Erika Mustermann')")
    yield name
    with admin() as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def customers(name: str) -> list[tuple]:
    with psycopg.connect(stack.database_url(name)) as conn:
        return conn.execute("SELECT id, name FROM customers").fetchall()


def test_stack_up_refuses_a_database_url_naming_someone_elses_database(someone_elses_database, tmp_path):
    """stack up with DATABASE_URL on a database budgetlab did not create: exit 2, one line naming it, data intact.

    stack down, pointed at the same servers, stops nothing and drops nothing.
    """
    servers = stack.servers()
    url = stack.database_url(someone_elses_database)
    result = cli(tmp_path, "stack", "up", DATABASE_URL=url, REDIS_URL=stack.redis_url(0))
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(lines) == 1 and f'"{someone_elses_database}"' in lines[0] and "drop it yourself" in lines[0], lines
    assert customers(someone_elses_database) == [(1, "Erika Mustermann")]
    down = cli(tmp_path, "stack", "down", DATABASE_URL=url, REDIS_URL=stack.redis_url(0))
    assert down.returncode == 0 and "nothing to stop" in down.stdout, down.stdout + down.stderr
    assert stack.fault() is None, "stack down stopped servers it was only pointed at"
    assert customers(someone_elses_database) == [(1, "Erika Mustermann")]
    assert stack.servers()["postgres"].url == servers["postgres"].url


def test_a_template_name_taken_by_someone_else_is_refused_too(someone_elses_database, tmp_path):
    """A workshop database whose template name is someone else's database: refused before anything is made."""
    workshop = someone_elses_database.removesuffix("_template") + "_ws"
    with admin() as conn:
        conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
            sql.Identifier(someone_elses_database), sql.Identifier(f"{workshop}_template")))
    try:
        result = cli(tmp_path, "stack", "up", DATABASE_URL=stack.database_url(workshop), REDIS_URL=stack.redis_url(0))
        assert result.returncode == 2 and f'"{workshop}_template"' in result.stderr, result.stdout + result.stderr
        assert customers(f"{workshop}_template") == [(1, "Erika Mustermann")]
        with admin() as conn:
            assert conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [workshop]).fetchone() is None
    finally:
        with admin() as conn:
            conn.execute(sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                sql.Identifier(f"{workshop}_template"), sql.Identifier(someone_elses_database)))


def test_drop_refuses_a_database_without_budgetlab_mark(someone_elses_database):
    """database.drop on someone else's database raises one sentence and drops nothing."""
    with pytest.raises(BudgetlabError, match=rf'^database "{someone_elses_database}" on \S+ was not created by budgetlab'):
        database.drop(someone_elses_database)
    assert customers(someone_elses_database) == [(1, "Erika Mustermann")]


# Alone: every check starting meanwhile sweeps the same orphans (CI rehearsal #25 saw one drop the copy
# before this test's stack up could).
@pytest.mark.alone
def test_scratch_databases_of_a_killed_process_are_dropped_by_stack_up(tmp_path, someone_elses_database):
    """A process SIGKILLed while holding a scratch copy: the next stack up drops that copy, and only that."""
    script = ("import os, signal\nfrom budgetlab.harness import database\n"
              "print(database.scratch_database('killed').rsplit('/', 1)[1], flush=True)\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert killed.returncode == -9, killed.stderr
    orphan = killed.stdout.strip()
    alive = database.scratch_database("alive").rsplit("/", 1)[1]
    try:
        with admin() as conn:
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        assert orphan in names
        env = {}
        if stack.servers()["postgres"].external:
            env = dict(DATABASE_URL=os.environ["DATABASE_URL"], REDIS_URL=os.environ["REDIS_URL"])
        else:
            # The suite's own embedded servers, seen from a second state folder, are external to it.
            env = dict(DATABASE_URL=stack.database_url(), REDIS_URL=stack.redis_url(0))
        result = cli(tmp_path, "stack", "up", **env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert orphan in result.stdout
        with admin() as conn:
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        assert orphan not in names, "the dead process's scratch database is still there"
        assert alive in names, "a live process's scratch database was dropped"
        assert someone_elses_database in names
        assert customers(someone_elses_database) == [(1, "Erika Mustermann")]
    finally:
        database.drop(alive)
