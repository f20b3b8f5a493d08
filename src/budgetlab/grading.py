"""The pytest plugin behind the hidden graders: targets, isolation, real workers, plain reports.

Loaded by tests/conftest.py. It gives each check its own copy of the
seeded database, its own Redis database and queues, and real workers
started with the target's code; and it writes one JSON line per check
for `budgetlab check`, which prints the symptom, never the grader's code.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from budgetlab import checkreport, clock, database, labs, stack, targets
from budgetlab.errors import BudgetlabError
from budgetlab.paths import display_path
from budgetlab.stack.leases import RedisLease
from budgetlab.workers import Environment, WorkerTree, celery_argv, unique_hostname


class CouldNotGrade(Exception):
    """The check could not run at all (for example the learner's module does not import)."""


class CheckStalled(BaseException):
    """A check ran far past its lab's limits; a BaseException, so lab code's `except Exception` cannot swallow it."""


# Wall seconds a check may take beyond its lab's longest hard limit: worker starts and
# database copies on a machine loaded far past its two cores. A check that needs more is stuck.
# BUDGETLAB_STALL_MARGIN changes it: more for a very slow machine, less for the harness's own test.
STALL_MARGIN = 60.0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("budgetlab")
    group.addoption("--target", default=os.environ.get("BUDGETLAB_TARGET", "labs"),
                    help="tree to grade: labs (the learner's), solutions, or a folder laid out like labs/")


def target_root(config: pytest.Config) -> Path:
    """The tree named by --target, resolved by the same function as the CLI's --target."""
    try:
        return targets.resolve(config.getoption("--target")).root
    except BudgetlabError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    root = target_root(config)
    # The target's lab packages import as lab1_inherited_limit, ..., whichever tree they come from.
    sys.path.insert(0, str(root))
    _setup_django()
    config.addinivalue_line("markers", "check: a hidden check of a lab (reported by budgetlab check)")


@pytest.fixture(scope="session")
def target_dir(pytestconfig: pytest.Config) -> Path:
    """The tree being graded: labs/, solutions/, or a copy with a fix applied."""
    return target_root(pytestconfig)


# One suffix per grader process: its own database, copied from the template when first used.
_SESSION_SUFFIX = uuid.uuid4().hex[:8]


def _setup_django() -> None:
    """Configure Django before collection, so graders may import models at module level.

    Nothing connects yet: the session database named here is created by the
    `django_ready` fixture, only in sessions that use the database.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
    try:
        url = stack.database_url(_session_name())
    except Exception:  # stack down: tests that need Django fail with the stack's own message
        return
    import django

    # Set only while the settings are read: a check or worker this process
    # starts must never inherit this session's database.
    inherited = os.environ.get("KONTOR_DATABASE_URL")
    os.environ["KONTOR_DATABASE_URL"] = url
    try:
        django.setup()
    finally:
        if inherited is None:
            os.environ.pop("KONTOR_DATABASE_URL", None)
        else:
            os.environ["KONTOR_DATABASE_URL"] = inherited


def _session_name() -> str:
    return f"{stack.database_name()}_session_{_SESSION_SUFFIX}"


@pytest.fixture(scope="session")
def django_ready():
    """The grader process's own database (a copy of the seeded template), dropped at the end."""
    stack.require()
    from django.db import connections

    name = connections["default"].settings_dict["NAME"]
    database.copy_template(name)
    yield name
    from django.db import connections

    connections.close_all()
    database.drop(name)


@pytest.fixture
def kontor_db(django_ready) -> str:
    """A fresh copy of the seeded database for one check; Django in this process points at it."""
    from django.db import connections

    url = database.scratch_database("check")
    name = url.rsplit("/", 1)[1]
    connection = connections["default"]
    connection.close()
    previous = connection.settings_dict["NAME"]
    connection.settings_dict["NAME"] = name
    yield url
    connection.close()
    connection.settings_dict["NAME"] = previous
    database.drop(name)


@pytest.fixture
def broker_url():
    """A Redis database of its own for one check, emptied before use and leased until the check ends."""
    with RedisLease() as lease:
        yield lease.url


@pytest.fixture
def celery_client(broker_url):
    """A Celery app that sends tasks by name and reads their results, like Kontor's web process."""
    from celery import Celery

    app = Celery("grader", broker=broker_url, backend=broker_url, set_as_current=False)
    app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"],
                    result_extended=True)
    yield app
    app.close()


@pytest.fixture
def queue_name() -> str:
    """A queue name no other check uses."""
    return f"check-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def start_worker(target_dir, kontor_db, broker_url, tmp_path):
    """Start real workers with the target's code; every one is stopped by PID afterwards."""
    started: list[WorkerTree] = []

    def start(queues: list[str], modules: list[str], concurrency: int = 1, extra_args: list[str] | None = None,
              settings_module: str | None = None, latency_plan: dict | None = None,
              argv: list[str] | None = None, expect_ready: int = 1, extra_env: dict | None = None,
              cwd: Path | None = None) -> WorkerTree:
        plan_path = None
        if latency_plan is not None:
            plan_path = tmp_path / f"plan-{len(started)}.json"
            plan_path.write_text(json.dumps(latency_plan))
        env = Environment(target_dir=target_dir, database_url=kontor_db, broker_url=broker_url, modules=modules,
                          settings_module=settings_module, latency_plan=plan_path, extra=extra_env or {})
        command = argv or celery_argv(queues, unique_hostname("grader"), concurrency, extra_args)
        tree = WorkerTree(command, env, tmp_path / f"worker-{len(started)}.log", expect_ready=expect_ready, cwd=cwd)
        started.append(tree)
        try:
            tree.start()
        except Exception as exc:
            raise CouldNotGrade(f"the worker did not start with the {target_dir.name} code: {exc}") from None
        return tree

    yield start
    # The check has its verdict: nothing a worker still runs matters, so no warm shutdown.
    for tree in started:
        tree.kill()


def _symptom(report: pytest.TestReport) -> str:
    """Return the first line a person should read: the assertion's message, not the grader's code."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash else str(report.longrepr)
    if text.startswith("AssertionError: "):
        text = text[len("AssertionError: "):]
    text = text.split("\nassert ", 1)[0].strip()
    if text.startswith(f"{CouldNotGrade.__module__}.CouldNotGrade: "):
        text = "could not grade: " + text.split(": ", 1)[1]
    if text.startswith(f"{CheckStalled.__module__}.CheckStalled: "):
        text = text.split(": ", 1)[1]
    return text.splitlines()[0] if text else "failed"


def pytest_runtest_logstart(nodeid: str, location) -> None:
    checkreport.write({"kind": "start", "nodeid": nodeid, "title": _title(nodeid)})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Every phase's time, fixtures included (shared workers start in a fixture), for the speed benchmark.
    checkreport.write({"kind": "timing", "nodeid": report.nodeid, "seconds": report.duration})
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        symptom = "" if report.passed else _symptom(report)
        checkreport.write({"nodeid": report.nodeid, "outcome": report.outcome, "title": _title(report.nodeid),
                 "symptom": symptom, "could_not_grade": symptom.startswith("could not grade"),
                 "seconds": round(report.duration, 2)})


def stall_seconds(lab) -> float:
    """Return how long one check of this lab may run before it counts as stuck, in wall seconds."""
    return clock.to_wall(lab.hard_limit) + float(os.environ.get("BUDGETLAB_STALL_MARGIN", STALL_MARGIN))


def _lab_of(item: pytest.Item):
    slug = Path(str(item.path)).parent.name
    return next((lab for lab in labs.load() if lab.slug == slug), None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    """Stop a check that runs far past its lab's limits, so a hang is reported in seconds, not minutes."""
    lab = _lab_of(item) if checkreport.active() else None
    if lab is None:
        yield
        return
    limit = stall_seconds(lab)
    files = ", ".join(display_path(target_root(item.config) / lab.slug / name) for name in lab.files)

    def stalled(signum, frame):
        raise CheckStalled(f"could not grade: «{_title(item.nodeid)}» was still running {limit:.0f} s after it "
                           f"began, far past lab {lab.number}'s longest hard limit ({lab.hard_limit} s, "
                           f"{clock.to_wall(lab.hard_limit):.1f} s on the lab clock); code in {files} never returned")

    previous = signal.signal(signal.SIGALRM, stalled)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_TITLES: dict[str, str] = {}


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        doc = (getattr(item.obj, "__doc__", None) or "").strip().splitlines()
        _TITLES[item.nodeid] = doc[0] if doc else item.name


def _title(nodeid: str) -> str:
    return _TITLES.get(nodeid, nodeid.rsplit("::", 1)[-1])

