"""The workshop's databases: a migrated, seeded template and cheap copies of it, each marked as budgetlab's.

`prepare()` keeps a template database (`kontor_template`) migrated and
seeded, and the workshop database (`kontor`) a copy of it. Both carry the
fingerprint of the code that made them, so a warm start only compares one
string, and a change to a migration or the generator rebuilds them. Every
grading check gets its own copy of the template, which PostgreSQL makes by
copying files, in a fraction of a second.

Every database created here carries budgetlab's mark, a comment on the
database that only budgetlab writes; nothing here drops or rebuilds a
database without it. A scratch copy's mark also names the process that
owns it, so copies whose owner died (Ctrl-C, SIGKILL, a server fault)
can be found and dropped later.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from budgetlab import stack
from budgetlab.errors import BudgetlabError
from budgetlab.stack import secrets
from budgetlab.stack.process import pid_alive, start_ticks

_SOURCES = ("books/migrations", "books/models.py", "datagen.py", "seed.py", "reference_data.py")
# The comment on every database budgetlab creates; a database without it is someone else's.
MARK = "budgetlab:"
_WORKSHOP_MARK = MARK + "workshop"
_SCRATCH_MARK = MARK + "scratch"


def fingerprint() -> str:
    """Return a hash of everything that decides the template's content."""
    import kontor

    root = Path(kontor.__file__).parent
    digest = hashlib.sha1()
    for source in _SOURCES:
        for path in sorted((root / source).rglob("*.py")) if (root / source).is_dir() else [root / source]:
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    from budgetlab.inworker import servertime

    digest.update(servertime.SQL.encode())
    return digest.hexdigest()[:16]


def _admin():
    import psycopg

    return psycopg.connect(stack.database_url("postgres"), autocommit=True, connect_timeout=5)


def _ident(name: str):
    from psycopg import sql

    return sql.Identifier(name)


def _stored_fingerprint(name: str) -> str | None:
    import psycopg

    try:
        with psycopg.connect(stack.database_url(name), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT value FROM budgetlab_meta WHERE key = 'fingerprint'").fetchone()
            return row[0] if row else None
    except psycopg.Error:
        return None


@dataclass(frozen=True)
class Owner:
    """The process that created a scratch database: host, PID and the PID's start time (PIDs are reused)."""

    host: str
    pid: int
    started: int

    @classmethod
    def current(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid(), start_ticks(os.getpid()) or 0)

    def mark(self) -> str:
        return f"{_SCRATCH_MARK} host={self.host} pid={self.pid} started={self.started}"

    @classmethod
    def parse(cls, mark: str) -> Owner | None:
        fields = dict(part.split("=", 1) for part in mark.split()[1:] if "=" in part)
        try:
            return cls(fields["host"], int(fields["pid"]), int(fields["started"]))
        except (KeyError, ValueError):
            return None

    def gone(self) -> bool:
        """Tell whether the owner has certainly exited; a process on another host is never judged."""
        if self.host != socket.gethostname():
            return False
        return not pid_alive(self.pid) or start_ticks(self.pid) != self.started


_ABSENT = object()


def _mark_of(conn, name: str):
    """Return a database's budgetlab mark, None when it has none, or _ABSENT when there is no such database."""
    row = conn.execute("SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
                       [name]).fetchone()
    if row is None:
        return _ABSENT
    if row[0] and row[0].startswith(MARK):
        return row[0]
    # Databases made before marks existed carry the fingerprint table only budgetlab writes.
    if _stored_fingerprint(name) is not None:
        _set_mark(conn, name, _WORKSHOP_MARK)
        return _WORKSHOP_MARK
    return None


def _set_mark(conn, name: str, mark: str) -> None:
    from psycopg import sql

    conn.execute(sql.SQL("COMMENT ON DATABASE {} IS {}").format(_ident(name), sql.Literal(mark)))


def _where() -> str:
    return secrets.address(stack.database_url("postgres"))


def _refusal(name: str) -> BudgetlabError:
    return BudgetlabError(
        f'database "{name}" on {_where()} was not created by budgetlab (it carries no budgetlab mark), '
        "so budgetlab leaves it alone; name another database in DATABASE_URL, or drop it yourself")


def require_own(names: list[str]) -> None:
    """Fail before touching anything when one of these databases exists and is not budgetlab's."""
    with _admin() as conn:
        for name in names:
            if _mark_of(conn, name) is None:
                raise _refusal(name)


def template_name() -> str:
    return f"{stack.database_name()}_template"


def require_current() -> None:
    """Fail with what to do when the template is older than this checkout's Kontor, or not owned by lab code's role.

    A check or run copies the template as it is: graded on a stale schema, or as
    a role that cannot write its tables, correct code would fail.
    """
    template = template_name()
    if _stored_fingerprint(template) != fingerprint() or not _tables_belong_to_lab_role(template):
        raise BudgetlabError(f"the workshop's database {template} was made by an older budgetlab or for other code; "
                             "run 'budgetlab stack up' to rebuild it")


def prepare() -> bool:
    """Make the template and the workshop database current; return True if anything was rebuilt."""
    wanted = fingerprint()
    template = template_name()
    workshop = stack.database_name()
    require_own([template, workshop])
    _ensure_lab_role()
    rebuilt = False
    if _stored_fingerprint(template) != wanted or not _tables_belong_to_lab_role(template):
        drop(template)
        _create(template, None, _WORKSHOP_MARK)
        _migrate_and_seed(template, wanted)
        rebuilt = True
    if rebuilt or _stored_fingerprint(workshop) != wanted:
        drop(workshop)
        _create(workshop, template, _WORKSHOP_MARK)
        rebuilt = True
    return rebuilt


def _tables_belong_to_lab_role(name: str) -> bool:
    """Tell whether lab code's role owns every table of a database (always true where DATABASE_URL's role is used)."""
    import psycopg

    role = stack.lab_role()
    if role is None:
        return True
    try:
        with psycopg.connect(stack.database_url(name), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> %s",
                               [role]).fetchone()
    except psycopg.Error:
        return False
    return row[0] == 0


def _ensure_lab_role() -> None:
    """Create or update the embedded server's role for lab code: a login, no superuser, no CREATEDB."""
    role = stack.lab_role()
    if role is None:
        return
    from psycopg import sql

    with _admin() as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        verb = "ALTER" if exists else "CREATE"
        conn.execute(sql.SQL(verb + " ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD {}").format(
            _ident(role), sql.Literal(secrets.password("lab-role"))))
        # Lab 5's sampler and its graders publish a load's counts at once; the one function
        # beyond a plain owner's rights that the labs need.
        conn.execute(sql.SQL("GRANT EXECUTE ON FUNCTION pg_stat_force_next_flush() TO {}").format(_ident(role)))


def _migrate_and_seed(name: str, wanted: str) -> None:
    # A separate interpreter: Django configures itself once per process, for one database.
    # As the lab role, so that it owns every table the labs write to.
    env = dict(os.environ, KONTOR_DATABASE_URL=stack.lab_database_url(name), DJANGO_SETTINGS_MODULE="kontor.settings")
    result = subprocess.run([sys.executable, "-m", "budgetlab.harness.database", wanted], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines() or ["no output"]
        raise BudgetlabError(f"could not migrate and seed {name}: {lines[-1]}")


def _create(name: str, template: str | None, mark: str) -> None:
    from psycopg import sql

    role = stack.lab_role()
    owner = sql.SQL(" OWNER {}").format(_ident(role)) if role else sql.SQL("")
    with _admin() as conn:
        if template:
            conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}{}").format(_ident(name), _ident(template), owner))
        else:
            conn.execute(sql.SQL("CREATE DATABASE {}{}").format(_ident(name), owner))
        # CREATE DATABASE cannot share a transaction; the mark follows at once, and an
        # unmarked leftover of a crash in between is only ever left alone, never dropped.
        _set_mark(conn, name, mark)


def copy_template(name: str) -> str:
    """Create database `name` as a copy of the template, owned by this process; return lab code's URL for it."""
    _create(name, template_name(), Owner.current().mark())
    return stack.lab_database_url(name)


def scratch_database(label: str) -> str:
    """Create a uniquely named copy of the template for one check; return its URL."""
    return copy_template(f"{stack.database_name()}_{label}_{uuid.uuid4().hex[:8]}")


def drop(name: str) -> None:
    """Drop one of budgetlab's databases if it exists, disconnecting whoever is still in it.

    A database without budgetlab's mark is refused with a BudgetlabError.
    """
    from psycopg import sql

    with _admin() as conn:
        mark = _mark_of(conn, name)
        if mark is _ABSENT:
            return
        if mark is None:
            raise _refusal(name)
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(_ident(name)))


def remove_orphans() -> list[str]:
    """Drop the scratch databases whose owning process has exited on this host; return their names."""
    from psycopg import sql

    removed = []
    with _admin() as conn:
        rows = conn.execute("SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database "
                            "WHERE shobj_description(oid, 'pg_database') LIKE %s", [_SCRATCH_MARK + " %"]).fetchall()
        for name, mark in rows:
            owner = Owner.parse(mark)
            if owner is not None and owner.gone():
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(_ident(name)))
                removed.append(name)
    return removed


def _main(wanted: str) -> None:
    import django
    from django.core.management import call_command
    from django.db import connection

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    from kontor.seed import seed

    seed()
    from budgetlab.inworker import servertime

    with connection.cursor() as cursor:
        # PostgreSQL's now() on the lab clock, for the connections of lab processes (servertime).
        cursor.execute(servertime.SQL)
        cursor.execute("CREATE TABLE budgetlab_meta (key text PRIMARY KEY, value text NOT NULL)")
        cursor.execute("INSERT INTO budgetlab_meta VALUES ('fingerprint', %s)", [wanted])


if __name__ == "__main__":
    _main(sys.argv[1])
