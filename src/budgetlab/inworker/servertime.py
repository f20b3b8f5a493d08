"""The servers' clocks on the lab clock: PostgreSQL's now() and its friends for a lab process, and Redis's expiries.

SQL's `now()` reads the database server's clock and a Redis key set with
`EX 7200` expires on the Redis server's: neither runs inside a lab
process, so `labtime` cannot reach them. Redis is `redistime`'s (installed
from here); PostgreSQL is brought onto the same production time in two ways:

- Each database the workshop makes has a schema `lab_clock` whose now(),
  transaction_timestamp(), statement_timestamp(), clock_timestamp(),
  timeofday(), one-argument age(), pg_sleep(), pg_sleep_for(),
  pg_sleep_until() and pg_stat_activity view shadow pg_catalog's for a
  connection that names it first on its search_path; a lab process's
  connections do, through PGOPTIONS (`connection_options`), which also
  tells them the factor and anchor. Other connections (the graders', a
  person's psql) see the server's own clock.
- SQL's time keywords are no functions a schema could shadow: a lab
  process's psycopg sends CURRENT_TIMESTAMP, CURRENT_TIME, CURRENT_DATE,
  LOCALTIME and LOCALTIMESTAMP (with or without a precision) written as
  now() cast to the keyword's type, wherever they stand outside a quoted
  string, a quoted name or a comment (`sql_on_lab_clock`).

What stays on the servers' wall clocks is registered in budgetlab.inworker.seams.
"""

from __future__ import annotations

import functools
import re

from budgetlab.inworker import afterimport, labtime, redistime

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
CREATE OR REPLACE FUNCTION {SCHEMA}.pg_sleep_until(t timestamptz) RETURNS void LANGUAGE sql VOLATILE AS
    $$ SELECT pg_catalog.pg_sleep(greatest(0, extract(epoch FROM t - {SCHEMA}.clock_timestamp())::float8
           * coalesce(nullif(current_setting('lab_clock.factor', true), '')::float8, 1))) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.timeofday() RETURNS text LANGUAGE sql VOLATILE PARALLEL SAFE AS
    $$ SELECT to_char({SCHEMA}.clock_timestamp(), 'Dy Mon DD HH24:MI:SS.US YYYY TZ') $$;
-- pg_catalog's one-argument age() counts from midnight of current_date, the server's date.
CREATE OR REPLACE FUNCTION {SCHEMA}.age(t timestamptz) RETURNS interval LANGUAGE sql STABLE PARALLEL SAFE AS
    $$ SELECT pg_catalog.age(CAST(CAST({SCHEMA}.now() AS date) AS timestamptz), t) $$;
CREATE OR REPLACE FUNCTION {SCHEMA}.age(t timestamp) RETURNS interval LANGUAGE sql STABLE PARALLEL SAFE AS
    $$ SELECT pg_catalog.age(CAST(CAST({SCHEMA}.now() AS date) AS timestamp), t) $$;
-- pg_stat_activity with each timestamp column on the reader's clock, whatever columns this server's version has.
DO $do$
DECLARE columns text;
BEGIN
    SELECT string_agg(CASE WHEN atttypid = 'timestamptz'::regtype
                           THEN format('{SCHEMA}.production(%1$I) AS %1$I', attname) ELSE quote_ident(attname) END,
                      ', ' ORDER BY attnum)
      INTO columns FROM pg_attribute
     WHERE attrelid = 'pg_catalog.pg_stat_activity'::regclass AND attnum > 0 AND NOT attisdropped;
    EXECUTE format('CREATE OR REPLACE VIEW {SCHEMA}.pg_stat_activity AS SELECT %s FROM pg_catalog.pg_stat_activity',
                   columns);
END $do$;
GRANT USAGE ON SCHEMA {SCHEMA} TO PUBLIC;
GRANT SELECT ON {SCHEMA}.pg_stat_activity TO PUBLIC;
"""


def connection_options(factor: float, anchor: float) -> str:
    """Return the PGOPTIONS that put a lab process's PostgreSQL connections on its clock."""
    if factor == 1:
        return ""
    # pg_catalog last: an unqualified now() then finds lab_clock's first. Django's tables live in public.
    return (f"-c search_path=\"$user\",public,{SCHEMA},pg_catalog "
            f"-c lab_clock.factor={factor!r} -c lab_clock.anchor={anchor!r}")




# What psycopg sends for each SQL time keyword: now() cast to the keyword's type (the precision goes with it).
_KEYWORDS = {"CURRENT_TIMESTAMP": "timestamptz", "CURRENT_TIME": "timetz", "CURRENT_DATE": "date",
             "LOCALTIMESTAMP": "timestamp", "LOCALTIME": "time"}
# One token at a time: what is quoted or commented out stays as written, a keyword is rewritten.
_TOKENS = re.compile(r"""
    (?P<skip>
        (?<![\w$])[eE]'(?:[^'\\]|\\.|'')*'     # an escape string, E'it\'s'
      | '(?:[^']|'')*'                           # a string
      | "(?:[^"]|"")*"                           # a quoted name
      | \$(?P<tag>[A-Za-z_][A-Za-z_0-9]*|)\$.*?\$(?P=tag)\$   # a dollar-quoted body
      | --[^\n]*                                 # a comment
      | /\*.*?\*/                                # a block comment
      | %\([^)]*\)[sbt]                          # a psycopg placeholder, %(current_date)s
    )
  | (?<![\w$.])(?P<keyword>CURRENT_TIMESTAMP|CURRENT_TIME|CURRENT_DATE|LOCALTIMESTAMP|LOCALTIME)(?![\w$])
    (?P<precision>\s*\(\s*\d+\s*\))?
""", re.IGNORECASE | re.VERBOSE | re.DOTALL)
_MAYBE = re.compile(rb"current_|localtime", re.IGNORECASE)


def _keyword(match: re.Match) -> str:
    if match.group("keyword") is None:
        return match.group(0)
    kind = _KEYWORDS[match.group("keyword").upper()]
    precision = re.sub(r"\s+", "", match.group("precision") or "")
    return "now()" if kind == "timestamptz" and not precision else f"(now()::{kind}{precision})"


@functools.lru_cache(maxsize=2048)
def sql_on_lab_clock(query: bytes) -> bytes:
    """Return a query with SQL's time keywords written as now() casts; the rest, quoted text included, as it was."""
    if not _MAYBE.search(query):
        return query
    return _TOKENS.sub(_keyword, query.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape")


def _patch_psycopg(module) -> None:
    """Every query a psycopg cursor sends (execute, executemany, copy, stream, server cursors) passes _convert_query."""
    from psycopg import sql

    convert = module.BaseCursor._convert_query

    def _convert_query(self, query, params=None):
        # As psycopg's own PostgresQuery turns them into bytes.
        if isinstance(query, sql.Composable):
            query = query.as_bytes(self._tx)
        if isinstance(query, str):
            query = query.encode(self._tx.encoding)
        if isinstance(query, bytes):
            query = sql_on_lab_clock(query)
        return convert(self, query, params)

    module.BaseCursor._convert_query = _convert_query


def install() -> None:
    """Put this process's Redis commands and PostgreSQL queries (it is on the lab clock already) on the lab clock."""
    if labtime.installed() is not None:
        redistime.install()
        afterimport.patch("psycopg._cursor_base", _patch_psycopg)
