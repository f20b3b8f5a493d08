"""Collection rules, and canaries that prove the whole suite leaves others' data alone.

The hidden graders run only through `budgetlab check`, never in the plain
suite. Around the suite, a database and Redis keys that a person might
own are planted on the servers the run uses (embedded, or external in the
second pass), and the run fails if any of them changed by its end.
"""

import os
import uuid
from pathlib import Path

import pytest

from budgetlab.commands import testplan, testrun

# The sample lab is a tree of its own, driven through the CLI by tests/harness.
collect_ignore_glob = ["harness/sample/*"]
GRADING = bool(os.environ.get("BUDGETLAB_GRADING"))
if not GRADING:
    # Pristine labs fail their graders by design; tests/maintainers runs them through the CLI.
    collect_ignore_glob += ["lab[0-9]_*", "lab[0-9][0-9]_*"]

# Fixtures that need the running stack or start a live worker: the grading plugin's, the sample lab's
# CLI (its commands check and run), a private stack. A test that asks for one is a `stack` test, which
# `make test-quick` leaves to `make test`; a module that reaches the stack by itself says so in pytestmark.
LIVE_FIXTURES = {"rig", "start_worker", "celery_client", "kontor_db", "broker_url", "queue_name", "probe_worker", "cli",
                 "private_stack", "redis_planter"}
# Tests that run real commands as a learner types them (a transcript re-run is a check or a run).
LIVE_TESTS = {"test_stored_transcript_matches_a_fresh_run"}


# Tests that play a lab's whole check or run and judge its verdict. They go into one pytest-xdist group per
# core, and a group runs in one process, test after test, so that while the other tests run, one check per
# core runs beside them. budgetlab.commands.testplan places them by the seconds tests/test_seconds.json
# recorded, and in the first pass queues the shortest after every other test, for whichever process is free.
WHOLE_CHECKS = testplan.WHOLE_CHECKS
CHECK_GROUPS = testrun.check_groups()
PASS = os.environ.get(testrun.PASS_VARIABLE) or testplan.FIRST
SECONDS = testplan.recorded(PASS)


# Session fixtures that cost seconds to make (a built docs site, fresh venvs): with tests side by side
# (pytest-xdist, --dist loadgroup), the tests that share one run in one worker, so it is made once.
SHARED_FIXTURES = {"built_site": "docs-site", "site_url": "docs-site", "chromium_browser": "docs-site",
                   "wheel": "audit-venvs", "audit_venv": "audit-venvs", "tools": "audit-venvs"}
# Shared groups that load the cores like whole checks: Chromium's sweeps beside two checks kept a lab-8
# worker 20 s from its questions (rehearsal #19), so they take a check group's turn, weighed in seconds.
HEAVY_SHARED = {"docs-site"}


def _selected(items, config) -> list:
    """Return the items `-m` keeps: pytest deselects them only after this file's hook, and only they are weighed."""
    expression = getattr(getattr(config, "option", None), "markexpr", "")
    if not expression:
        return items
    try:  # pytest's own matcher (pytest 8 and 9); should it move, every item is weighed
        from _pytest.mark import MarkMatcher
        from _pytest.mark.expression import Expression

        compiled = Expression.compile(expression)
        return [item for item in items if compiled.evaluate(MarkMatcher.from_markers(item.iter_markers()))]
    except Exception:
        return items


# First, before pytest-xdist's own hook in its workers turns each xdist_group mark into the suffix of a nodeid
# that its scheduler groups by: a mark added after that reaches no scheduler.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    shared: dict[int, str] = {}
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if LIVE_FIXTURES & names or getattr(item, "originalname", "") in LIVE_TESTS:
            item.add_marker(pytest.mark.stack)
        if groups := sorted({SHARED_FIXTURES[name] for name in names & SHARED_FIXTURES.keys()}):
            shared[id(item)] = groups[0]
            if groups[0] not in HEAVY_SHARED:
                item.add_marker(pytest.mark.xdist_group(groups[0]))
    plan = testplan.plan_items(
        _selected(items, config), CHECK_GROUPS,
        is_check=lambda item: id(item) not in shared and getattr(item, "originalname", "") in WHOLE_CHECKS,
        shared_group=lambda item: shared[id(item)] if shared.get(id(item)) in HEAVY_SHARED else None,
        seconds=SECONDS, with_tail=PASS == testplan.FIRST)
    for index, units in enumerate(plan.groups):
        for item in (item for unit in units for item in unit.items):
            item.add_marker(pytest.mark.xdist_group(f"whole-checks-{index + 1}"))
    if plan.tail:
        last = {id(unit.items[0]) for unit in plan.tail}
        items[:] = [item for item in items if id(item) not in last] + [unit.items[0] for unit in plan.tail]


@pytest.hookimpl(optionalhook=True)  # a check's own pytest runs without pytest-xdist
def pytest_xdist_node_collection_finished(node, ids):
    """Stop the run when pytest-xdist lost the check groups: every process would then run checks at once.

    pytest-xdist tells its scheduler a test's group by a suffix on the
    test's id (`...@whole-checks-1`), which it adds in its own collection
    hook from the marks already there. The suffix silently never arrived
    while this file's hook ran after pytest-xdist's, and never does with
    pytest 9.2 (pytest-xdist issue #1386); nothing else fails. A check
    queued last (testplan's tail) has none by design, so only checks
    that all came without one tell.
    """
    if node.config.getvalue("dist") != "loadgroup":
        return
    checks = [i for i in ids if testplan.is_whole_check(testplan.base_id(i))]
    if checks and not any("@whole-checks-" in i.rpartition("]")[2] for i in checks):
        pytest.exit(f"pytest-xdist ignores the check groups here ({checks[0]} came without its group), so every "
                    "process would run whole checks at once: is pytest 9.2 or newer installed "
                    "(pytest-xdist issue #1386)?", returncode=3)


# What each test took (setup, call and teardown), summed in the one process that sees every report and added,
# when a `make test` pass ends, to the file testrun names (scripts/test_seconds.py keeps it).
_TOOK: dict[str, float] = {}


def pytest_runtest_logreport(report):
    if not GRADING:
        name = testplan.base_id(report.nodeid)
        _TOOK[name] = _TOOK.get(name, 0.0) + report.duration


# Redis databases that get a key nobody but a person wrote: the control database and one in five others,
# and one in ten beside budgetlab's mark, as a person writes into a database an earlier run released.
CANARY_DATABASES = lambda count: [0, *range(3, count, 5)]  # noqa: E731
MARKED_CANARY_DATABASES = lambda count: range(4, count, 10)  # noqa: E731
# In one step, as a lease's own claim looks: only into a database nobody leases that holds nothing or
# nothing but budgetlab's mark (never beside a crashed run's leftovers, which the next lease empties),
# in place of the mark or beside it.
_PLANT = """
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('select', ARGV[1])
local size = redis.call('dbsize')
local planted = 0
if size == 0 or (size == 1 and redis.call('exists', ARGV[2]) == 1) then
  if ARGV[5] == '1' then redis.call('set', ARGV[2], 'as a release leaves it') else redis.call('del', ARGV[2]) end
  redis.call('set', ARGV[3], ARGV[4])
  planted = 1
end
redis.call('select', 0)
return planted
"""


def plant_in_redis(control, number: int, key: str, value: str, marked: bool) -> bool:
    """Write a person's key into database `number` if it is free for one (see _PLANT); say whether it was written."""
    from budgetlab.stack.leases import MARK_KEY

    return bool(control.eval(_PLANT, 1, f"budgetlab:lease:{number}", number, MARK_KEY, key, value,
                             "1" if marked else "0"))


@pytest.fixture
def redis_planter():
    """plant(numbers, key, marked) gives each free one of those databases a person's key, removed at teardown."""
    import redis

    from budgetlab import stack

    control = redis.Redis.from_url(stack.redis_url(0))
    planted: list[tuple[redis.Redis, str]] = []

    def plant(numbers, key: str, marked: bool) -> dict[int, redis.Redis]:
        """Return a client for each database that got the key."""
        written = {number: redis.Redis.from_url(stack.redis_url(number)) for number in numbers
                   if plant_in_redis(control, number, key, "kept", marked)}
        planted.extend((client, key) for client in written.values())
        return written

    yield plant
    for client, key in planted:
        client.delete(key)
        client.close()
    control.close()


def _plant():
    """Plant the canaries; return what to verify, or None when the stack is not up."""
    import psycopg
    import redis
    from psycopg import sql

    from budgetlab import stack

    try:
        stack.require()
        with psycopg.connect(stack.database_url("postgres"), autocommit=True, connect_timeout=3) as conn:
            name = f"canary_app_{uuid.uuid4().hex[:8]}"
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except Exception:  # no stack: the tests that need one say so themselves
        return None
    with psycopg.connect(stack.database_url(name), autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers VALUES (1, 'Erika Mustermann')")
    control = redis.Redis.from_url(stack.redis_url(0))
    count = int(control.config_get("databases")["databases"])
    key = f"canary:{uuid.uuid4().hex[:8]}"
    control.set(key, "a person's data")
    planted = [0]
    for marked, numbers in ((False, CANARY_DATABASES(count)[1:]), (True, MARKED_CANARY_DATABASES(count))):
        planted += [number for number in numbers if plant_in_redis(control, number, key, "a person's data", marked)]
    control.close()
    return name, key, planted


def _verify_and_remove(name: str, key: str, planted: list[int]) -> list[str]:
    import psycopg
    import redis
    from psycopg import sql

    from budgetlab import stack

    lost = []
    try:
        with psycopg.connect(stack.database_url(name)) as conn:
            if conn.execute("SELECT name FROM customers").fetchall() != [("Erika Mustermann",)]:
                lost.append(f"the rows of database {name}")
    except psycopg.Error as exc:
        lost.append(f"database {name} ({str(exc).strip().splitlines()[0]})")
    with psycopg.connect(stack.database_url("postgres"), autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    for number in planted:
        client = redis.Redis.from_url(stack.redis_url(number))
        if client.get(key) != b"a person's data":
            lost.append(f"key {key} in Redis database {number}")
        client.delete(key)
        client.close()
    return lost


# Data a person might keep on the same servers: planted once before any test runs, and checked once
# after the last, in the one process that sees the whole run (pytest-xdist's controller, when tests run
# side by side): a worker of its own would plant while another worker's rigs already claim databases.
def pytest_sessionstart(session):
    if not GRADING and not hasattr(session.config, "workerinput"):
        session.config._budgetlab_canaries = _plant()


def pytest_sessionfinish(session, exitstatus):
    if _TOOK and not hasattr(session.config, "workerinput") and os.environ.get(testplan.SECONDS_VARIABLE):
        testplan.add_seconds(Path(os.environ[testplan.SECONDS_VARIABLE]), _TOOK)
    planted = getattr(session.config, "_budgetlab_canaries", None)
    if planted:
        lost = _verify_and_remove(*planted)
        if lost:
            session.config.get_terminal_writer().line(
                f"the suite destroyed data budgetlab did not create: {', '.join(lost)}", red=True, bold=True)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
