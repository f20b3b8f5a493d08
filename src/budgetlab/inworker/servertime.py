"""The servers' clocks on the lab clock: Redis expiries sent by a lab process, and PostgreSQL's now().

A Redis key set with `EX 7200` expires on the Redis server's wall clock,
and SQL's `now()` reads the database server's: neither runs inside a lab
process, so `labtime` cannot reach them. Two seams bring them onto the
same production time:

- Redis: a lab process's redis-py (Kontor's, kombu's, the learner's) sends
  every expiry it writes (SET EX/PX/EXAT/PXAT, SETEX, PSETEX, EXPIRE,
  PEXPIRE, EXPIREAT, PEXPIREAT, GETEX) converted to wall milliseconds, so
  the server drops the key when production time says so, and the time-out
  of every blocking command (BLPOP, BRPOP, XREAD BLOCK, ...) likewise.
  Redis checks those time-outs ten times a wall second, so a blocking
  wait ends at the earliest about 0.1 wall seconds after it began.
- PostgreSQL: each database the workshop makes has a schema `lab_clock`
  whose now(), transaction_timestamp(), statement_timestamp(),
  clock_timestamp(), pg_sleep() and pg_sleep_for() shadow pg_catalog's
  for a connection that names it first on its search_path; a lab
  process's connections do, through PGOPTIONS (`connection_options`),
  which also tells them the factor and anchor. Other connections (the
  graders', a person's psql) see the server's own clock.
"""

from __future__ import annotations

import math

from budgetlab.inworker import afterimport, labtime

SCHEMA = "lab_clock"

# Functions with pg_catalog's names and signatures, on the clock the connection names.
SQL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE OR REPLACE FUNCTION {SCHEMA}.production(t timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN f IS NULL THEN t ELSE a + (t - a) / f END
    FROM (SELECT nullif(current_setting('lab_clock.factor', true), '')::float8 AS f,
                 to_timestamp(nullif(current_setting('lab_clock.anchor', true), '')::float8) AS a) AS clock $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.now() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
    $$ SELECT {SCHEMA}.production(pg_catalog.transaction_timestamp()) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.transaction_timestamp() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
    $$ SELECT {SCHEMA}.production(pg_catalog.transaction_timestamp()) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS
    $$ SELECT {SCHEMA}.production(pg_catalog.statement_timestamp()) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.clock_timestamp() RETURNS timestamptz LANGUAGE sql VOLATILE PARALLEL SAFE AS
    $$ SELECT {SCHEMA}.production(pg_catalog.clock_timestamp()) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.pg_sleep(seconds float8) RETURNS void LANGUAGE sql VOLATILE AS
    $$ SELECT pg_catalog.pg_sleep(seconds * coalesce(nullif(current_setting('lab_clock.factor', true), '')::float8, 1)) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.pg_sleep_for(length interval) RETURNS void LANGUAGE sql VOLATILE AS
    $$ SELECT pg_catalog.pg_sleep_for(length * coalesce(nullif(current_setting('lab_clock.factor', true), '')::float8, 1)) $$;
GRANT USAGE ON SCHEMA {SCHEMA} TO PUBLIC;
"""


def connection_options(factor: float, anchor: float) -> str:
    """Return the PGOPTIONS that put a lab process's PostgreSQL connections on its clock."""
    if factor == 1:
        return ""
    # pg_catalog last: an unqualified now() then finds lab_clock's first. Django's tables live in public.
    return (f"-c search_path=\"$user\",public,{SCHEMA},pg_catalog "
            f"-c lab_clock.factor={factor!r} -c lab_clock.anchor={anchor!r}")


# Redis commands whose arguments carry an expiry: the position of a relative one in seconds or
# milliseconds, or of an absolute Unix time, after the command name.
_RELATIVE = {b"SETEX": (1, 1.0), b"PSETEX": (1, 0.001), b"EXPIRE": (1, 1.0), b"PEXPIRE": (1, 0.001)}
_ABSOLUTE = {b"EXPIREAT": (1, 1.0), b"PEXPIREAT": (1, 0.001)}
_OPTIONS = {b"EX": 1.0, b"PX": 0.001, b"EXAT": 1.0, b"PXAT": 0.001}
# Blocking commands, and where their time-out stands: the last argument, or the first after the name.
_BLOCKING_LAST = {b"BLPOP", b"BRPOP", b"BRPOPLPUSH", b"BLMOVE", b"BZPOPMIN", b"BZPOPMAX"}
_BLOCKING_FIRST = {b"BLMPOP", b"BZMPOP"}


def _name(value) -> bytes:
    if isinstance(value, str):
        value = value.encode()
    return value.upper() if isinstance(value, bytes) else b""


def _wall_ms(clock: labtime.Clock, seconds: float) -> int:
    return max(1, math.ceil(seconds * clock.factor * 1000))


def redis_args(clock: labtime.Clock, args: tuple) -> tuple:
    """Return a Redis command's arguments with every expiry converted from production to wall time."""
    if not args:
        return args
    command, args = _name(args[0]), list(args)
    renamed = {b"SETEX": b"PSETEX", b"EXPIRE": b"PEXPIRE", b"EXPIREAT": b"PEXPIREAT"}
    if command in _RELATIVE:
        at, unit = _RELATIVE[command]
        args[0] = renamed.get(command, command).decode()
        args[at + 1] = _wall_ms(clock, float(args[at + 1]) * unit)
    elif command in _ABSOLUTE:
        at, unit = _ABSOLUTE[command]
        args[0] = renamed.get(command, command).decode()
        args[at + 1] = _wall_epoch_ms(clock, float(args[at + 1]) * unit)
    elif command in _BLOCKING_LAST or command in _BLOCKING_FIRST:
        at = -1 if command in _BLOCKING_LAST else 1
        seconds = float(args[at])
        if seconds > 0:  # 0 blocks for ever
            args[at] = f"{seconds * clock.factor:.6f}"
    elif command in (b"XREAD", b"XREADGROUP"):
        for index in range(1, len(args) - 1):
            if _name(args[index]) == b"BLOCK" and float(args[index + 1]) > 0:
                args[index + 1] = _wall_ms(clock, float(args[index + 1]) / 1000)
                break
    elif command in (b"SET", b"GETEX"):
        for index in range(2, len(args) - 1):
            option = _name(args[index])
            if option in _OPTIONS:
                value = float(args[index + 1]) * _OPTIONS[option]
                if option in (b"EX", b"PX"):
                    args[index], args[index + 1] = "PX", _wall_ms(clock, value)
                else:
                    args[index], args[index + 1] = "PXAT", _wall_epoch_ms(clock, value)
                break
    return tuple(args)


def _wall_epoch_ms(clock: labtime.Clock, production_epoch: float) -> int:
    return math.ceil((clock.anchor + (production_epoch - clock.anchor) * clock.factor) * 1000)


def _patch_redis(module) -> None:
    clock = labtime.installed()
    for name in ("PythonRespSerializer", "HiredisRespSerializer"):
        serializer = getattr(module, name, None)
        if serializer is None or getattr(serializer.pack, "_lab_clock", False):
            continue
        pack = serializer.pack

        def scaled(self, *args, _pack=pack):
            return _pack(self, *redis_args(clock, args))

        scaled._lab_clock = True
        serializer.pack = scaled


def install() -> None:
    """Convert Redis expiries in this process (already on the lab clock) from production to wall time."""
    if labtime.installed() is not None:
        afterimport.patch("redis.connection", _patch_redis)
