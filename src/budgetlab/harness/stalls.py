"""Stalls: hold one chosen database write of the target's code until the soft limit lands inside it.

In production a soft limit lands wherever the task is, and now and then
that is a statement waiting in the database (a lock, a slow disk). A
Stall names one write by what it does, the nth insert of a job's items,
the write that records a job's failure, the one that marks it completed,
and a trigger owned by the grader's role puts the backend that makes it
to sleep. The worker waits in psycopg, the soft limit fires there, and
the connection is left in the middle of a command, as it would be.

The sleeper ends as soon as the worker gives that connection up: the
database checks every CHECK_INTERVAL whether its client is still there
(client_connection_check_interval, PostgreSQL 14 and newer, set on the
rig's scratch database before any worker connects). `release` ends any
sleeper left, for code that writes on a second connection and leaves the
first one open. A stall with `seconds` sleeps that long at most (wall
seconds): a lock a busy database releases at last, for code that no soft
limit interrupts (a threads pool) and must go on once the write is made.
"""

from __future__ import annotations

from dataclasses import dataclass

# How often a stalled backend looks for its client: short beside the soft window of any lab.
CHECK_INTERVAL = "20ms"
# Longer than any check waits; a sleeper is always ended before this (client gone, release, or the rig's drop).
SLEEP_SECONDS = 3600
APPLICATION_PREFIX = "budgetlab-stall-"


@dataclass(frozen=True)
class Stall:
    """One write to hold: `event` (INSERT or UPDATE) on `table` for rows matching `condition`, the nth one."""

    name: str  # a word of lower-case letters, digits and underscores, unique in the database
    table: str
    event: str
    condition: str  # SQL over NEW (and OLD for an UPDATE), with the values written in
    nth: int = 1
    seconds: float = SLEEP_SECONDS  # wall seconds the write is held at most

    @property
    def sequence(self) -> str:
        return f"public.budgetlab_stall_{self.name}"


_INSTALL = """
CREATE SEQUENCE {sequence};
CREATE SEQUENCE {sequence}_at;
CREATE FUNCTION {sequence}() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    -- A sequence counts outside the transaction, so a write that is stalled and then rolled back still counts:
    -- the stall happens once, never again on the write a handler makes next. The second one keeps when (the
    -- server's wall clock, in milliseconds), likewise.
    IF nextval('{sequence}') = {nth} THEN
        PERFORM set_config('application_name', '{application}', false);
        PERFORM setval('{sequence}_at', (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint);
        PERFORM pg_sleep({seconds});
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER budgetlab_stall_{name} BEFORE {event} ON {table} FOR EACH ROW WHEN ({condition})
    EXECUTE FUNCTION {sequence}();
"""


def install(stalls: list[Stall]) -> None:
    """Create each stall's trigger in the database of this process's Django connection (the grader's role).

    Call it before any worker connects: the client check it sets applies to new connections.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        name = connection.settings_dict["NAME"]
        cursor.execute(f"ALTER DATABASE {connection.ops.quote_name(name)} "
                       f"SET client_connection_check_interval = '{CHECK_INTERVAL}'")
        for stall in stalls:
            cursor.execute(_INSTALL.format(sequence=stall.sequence, nth=stall.nth, name=stall.name,
                                           application=APPLICATION_PREFIX + stall.name, seconds=stall.seconds,
                                           event=stall.event, table=connection.ops.quote_name(stall.table),
                                           condition=stall.condition))


def fired(stall: Stall) -> bool:
    """Tell whether the stall's write was made: the target's code reached it and the backend slept there."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT last_value, is_called FROM {stall.sequence}")
        last_value, is_called = cursor.fetchone()
    return bool(is_called) and last_value >= stall.nth


def fired_at(stall: Stall) -> float | None:
    """When the stall's write was made and the backend began to sleep (wall seconds, as time.time()), or None."""
    from django.db import connection

    if not fired(stall):
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT last_value FROM {stall.sequence}_at")
        return cursor.fetchone()[0] / 1000


def release() -> int:
    """End every stalled backend of this database still asleep; return how many."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND application_name LIKE %s",
                       [APPLICATION_PREFIX + "%"])
        return cursor.fetchone()[0]
