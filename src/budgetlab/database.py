"""The workshop's databases: a migrated, seeded template and cheap copies of it.

`prepare()` keeps a template database (`kontor_template`) migrated and
seeded, and the workshop database (`kontor`) a copy of it. Both carry the
fingerprint of the code that made them, so a warm start only compares one
string, and a change to a migration or the generator rebuilds them. Every
grading check gets its own copy of the template, which PostgreSQL makes by
copying files, in a fraction of a second.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from pathlib import Path

from budgetlab import stack
from budgetlab.errors import BudgetlabError

_SOURCES = ("books/migrations", "books/models.py", "datagen.py", "seed.py", "reference_data.py")


def fingerprint() -> str:
    """Return a hash of everything that decides the template's content."""
    import kontor

    root = Path(kontor.__file__).parent
    digest = hashlib.sha1()
    for source in _SOURCES:
        for path in sorted((root / source).rglob("*.py")) if (root / source).is_dir() else [root / source]:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _admin():
    import psycopg

    return psycopg.connect(stack.database_url("postgres"), autocommit=True, connect_timeout=5)


def _stored_fingerprint(name: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(stack.database_url(name), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT value FROM budgetlab_meta WHERE key = 'fingerprint'").fetchone()
            return row[0] if row else None
    except psycopg.Error:
        return None


def template_name() -> str:
    return f"{stack.database_name()}_template"


def prepare() -> bool:
    """Make the template and the workshop database current; return True if anything was rebuilt."""
    wanted = fingerprint()
    template = template_name()
    rebuilt = False
    if _stored_fingerprint(template) != wanted:
        drop(template)
        with _admin() as conn:
            conn.execute(f'CREATE DATABASE "{template}"')
        _migrate_and_seed(template, wanted)
        rebuilt = True
    workshop = stack.database_name()
    if rebuilt or _stored_fingerprint(workshop) != wanted:
        drop(workshop)
        copy_template(workshop)
        rebuilt = True
    return rebuilt


def _migrate_and_seed(name: str, wanted: str) -> None:
    # A separate interpreter: Django configures itself once per process, for one database.
    env = dict(os.environ, KONTOR_DATABASE_URL=stack.database_url(name), DJANGO_SETTINGS_MODULE="kontor.settings")
    result = subprocess.run([sys.executable, "-m", "budgetlab.database", wanted], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
        raise BudgetlabError(f"could not migrate and seed {name}: {lines[-1]}")


def copy_template(name: str) -> str:
    """Create database `name` as a copy of the template and return its URL."""
    with _admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template_name()}"')
    return stack.database_url(name)


def scratch_database(label: str) -> str:
    """Create a uniquely named copy of the template for one check; return its URL."""
    return copy_template(f"{stack.database_name()}_{label}_{uuid.uuid4().hex[:8]}")


def drop(name: str) -> None:
    """Drop a database if it exists, disconnecting whoever is still in it."""
    with _admin() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _main(wanted: str) -> None:
    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from kontor.seed import seed

    seed()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE budgetlab_meta (key text PRIMARY KEY, value text NOT NULL)")
        cursor.execute("INSERT INTO budgetlab_meta VALUES ('fingerprint', %s)", [wanted])


if __name__ == "__main__":
    _main(sys.argv[1])
