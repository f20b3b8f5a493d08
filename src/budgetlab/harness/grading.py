"""The pytest plugin behind the hidden graders: targets, isolation, real workers, plain reports.

Loaded by tests/conftest.py. It gives each check its own copy of the
seeded database, its own Redis database and queues, and real workers
started with the target's code; and it writes one JSON line per check
for `budgetlab check`, which prints the symptom, never the grader's code.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path

import pytest

from budgetlab import labs, stack, targets
from budgetlab.errors import BudgetlabError, StackShortage
from budgetlab.harness import checkreport
from budgetlab.harness.rig import Rig, WorkerDidNotStart, configure_django
from budgetlab.harness.workers import WorkerTree
from budgetlab.inworker import clock, seams
from budgetlab.paths import display_path
from budgetlab.stories.reading import Unmeasured


class CouldNotGrade(Exception):
    """The check could not run at all (for example the learner's module does not import)."""


class MachineBusy(CouldNotGrade):
    """The check ran, but the machine kept it from timing the code (every symptom was reading.Unmeasured): a slower
    lab clock may grade it (commands.checking grades once more on one)."""


# How many more times the suite runs a check that said it could not grade (exit 2, or one check's line) before the
# last verdict counts: its tests run checks beside other checks, and CI saw a lab 1 alternative's masters answer too
# late twice in a row (2026-12-06), rehearsals lab 8's rush fail to come twice in a row.
AGAIN_WITHOUT_VERDICT = 2


class CheckStalled(pytest.fail.Exception):
    """A check ran far past its lab's limits.

    A BaseException, so lab code's `except Exception` cannot swallow it; and
    pytest's own failure (pytest.fail's), so pytest reports it as the check's
    failure wherever it lands: raised in a fixture that checks share, any
    other BaseException left pytest's fixture cache half-written. The checks
    after it are not started (see pytest_runtest_makereport).
    """


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
    # The target's lab packages import as lab1_worker_container, ..., whichever tree they come from.
    sys.path.insert(0, str(root))
    _setup_django()
    config.addinivalue_line("markers", "check: a hidden check of a lab (reported by budgetlab check)")


@pytest.fixture(scope="session")
def target_dir(pytestconfig: pytest.Config) -> Path:
    """The tree being graded: labs/, solutions/, or a copy with a fix applied."""
    return target_root(pytestconfig)


# One suffix per grader process: a database name no check ever connects to (see _setup_django).
_SESSION_SUFFIX = uuid.uuid4().hex[:8]


def _setup_django() -> None:
    """Configure Django before collection, so graders may import models at module level.

    Nothing connects yet: the database named here never exists. Every
    check that reads the database does so inside a rig's `django()` block,
    which points Django at the rig's own copy of the seeded template.
    """
    try:
        url = stack.database_url(f"{stack.database_name()}_session_{_SESSION_SUFFIX}")
    except Exception:  # stack down: tests that need Django fail with the stack's own message
        return
    configure_django(url)


@pytest.fixture(scope="session")
def stack_ready() -> None:
    """Fail at once, saying what to do, when a server of the stack is down."""
    stack.require()


@pytest.fixture
def rig(target_dir, tmp_path):
    """The check's Rig: its database, Redis database, client and workers, all made on first use."""
    with Rig(target_dir, label="check") as session:
        yield session


@pytest.fixture
def kontor_db(stack_ready, rig) -> str:
    """A fresh copy of the seeded database for one check; Django in this process points at it."""
    with rig.django() as url:
        yield url


@pytest.fixture
def broker_url(rig) -> str:
    """A Redis database of its own for one check, emptied before use and leased until the check ends."""
    return rig.broker_url


@pytest.fixture
def celery_client(rig):
    """A Celery app that sends tasks by name and reads their results, like Kontor's web process."""
    return rig.client


@pytest.fixture
def queue_name(rig) -> str:
    """A queue name no other check uses."""
    return rig.queue()


@pytest.fixture
def start_worker(target_dir, kontor_db, broker_url, rig, tmp_path):
    """Start real workers with the target's code; the rig stops every one by PID afterwards."""
    started: list[WorkerTree] = []

    def start(queues: list[str], modules: list[str], concurrency: int = 1, extra_args: list[str] | None = None,
              settings_module: str | None = None, latency_plan: dict | None = None,
              argv: list[str] | None = None, expect_ready: int = 1, extra_env: dict | None = None,
              cwd: Path | None = None) -> WorkerTree:
        try:
            tree = rig.start_worker(queues, modules, concurrency, extra_args=extra_args,
                                    settings_module=settings_module, latency_plan=latency_plan, extra_env=extra_env,
                                    argv=argv, expect_ready=expect_ready, cwd=cwd,
                                    log=tmp_path / f"worker-{len(started)}.log")
        except WorkerDidNotStart as exc:
            raise could_not_start(target_dir, exc) from None
        started.append(tree)
        return tree

    return start


def faults_first(symptoms: Iterable[str | None]) -> list[str]:
    """Return the code's symptoms among `symptoms`, in order; with none but the machine's (Unmeasured), MachineBusy.

    A run the machine kept from being measured must not hide another run's
    fault, nor fail the code on its own: then the check cannot grade (exit 2).
    """
    said = [symptom for symptom in symptoms if symptom]
    faults = [symptom for symptom in said if not isinstance(symptom, Unmeasured)]
    if said and not faults:
        raise MachineBusy("; ".join(said))
    return faults


def could_not_start(target_dir: Path, exc: Exception) -> CouldNotGrade:
    """Say that a worker did not start with the graded code (the learner's module may not import)."""
    return CouldNotGrade(f"the worker did not start with the {target_dir.name} code: {exc}")


def _symptom(report: pytest.TestReport) -> str:
    """Return the first line a person should read: the assertion's message, not the grader's code."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash else str(report.longrepr)
    if text.startswith("AssertionError: "):
        text = text[len("AssertionError: "):]
    text = text.split("\nassert ", 1)[0].strip()
    if text.startswith((f"{CouldNotGrade.__module__}.CouldNotGrade: ", f"{MachineBusy.__module__}.MachineBusy: ")):
        text = "could not grade: " + text.split(": ", 1)[1]
    if text.startswith(f"{CheckStalled.__module__}.CheckStalled: "):
        text = text.split(": ", 1)[1]
    return text.splitlines()[0] if text else "failed"


def pytest_runtest_logstart(nodeid: str, location) -> None:
    checkreport.write({"kind": "start", "nodeid": nodeid, "title": _title(nodeid)})


def _shortage(exc: BaseException | None) -> StackShortage | None:
    """Return the StackShortage behind a failure, however the check wrapped it (raise … from, a fixture's cache)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, StackShortage):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Mark a check that failed because the stack could not give it a piece it is owed: it could not grade.

    A check that failed otherwise, on a lab whose files use a clock seam the
    lab clock leaves on wall time, carries the note that names each such line.
    """
    made = yield
    shortage = _shortage(call.excinfo.value) if call.excinfo is not None else None
    report = made.get_result()
    if shortage is not None:
        report.budgetlab_could_not_grade = f"could not grade: {str(shortage).splitlines()[0]}"
    elif call.excinfo is not None and isinstance(call.excinfo.value, MachineBusy):
        report.budgetlab_busy = True
    elif report.failed and (lab := _lab_of(item)) is not None:
        report.budgetlab_seam_note = seam_note(target_root(item.config) / lab.slug, lab.readonly)
    if call.excinfo is not None and isinstance(call.excinfo.value, CheckStalled) and not item.session.shouldfail:
        # The lab's code never returned: each check after this one would wait as long for the same code (lab 5's
        # sampler looping for ever ran into the 180 s backstop after two checks and could not grade). pytest stops
        # after this check, as -x does (exit 1), and the ones it will not start are reported as not run.
        stalled, items = _title(item.nodeid), item.session.items
        _NOT_STARTED.extend((later.nodeid, stalled) for later in items[items.index(item) + 1:])
        item.session.shouldfail = f"«{stalled}» never returned"


@functools.lru_cache(maxsize=None)
def seam_note(folder: Path, readonly: tuple[str, ...] = ()) -> str:
    """The note a failed check adds for the learner's lines that run on a wall clock (seams.note), once per folder."""
    return seams.note(seams.lab_files(folder, readonly), display_path)


# The checks pytest will not start because one before them never returned: (node id, that one's title).
_NOT_STARTED: list[tuple[str, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Every phase's time, fixtures included (shared workers start in a fixture), for the speed benchmark.
    checkreport.write({"kind": "timing", "nodeid": report.nodeid, "seconds": report.duration})
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        symptom = "" if report.passed else getattr(report, "budgetlab_could_not_grade", None) or _symptom(report)
        note = getattr(report, "budgetlab_seam_note", "")
        if note and not symptom.startswith("could not grade"):
            # The check saw the symptom; the note says which of the learner's lines the workshop's clock leaves out.
            symptom = f"{symptom}. {note}"
        checkreport.write({"nodeid": report.nodeid, "outcome": report.outcome, "title": _title(report.nodeid),
                 "symptom": symptom, "could_not_grade": symptom.startswith("could not grade"),
                 "busy": getattr(report, "budgetlab_busy", False),
                 "seconds": round(report.duration, 2)})


def stall_seconds(lab) -> float:
    """Return how long one check of this lab may run before it counts as stuck, in wall seconds."""
    return clock.to_wall(lab.hard_limit) + float(os.environ.get("BUDGETLAB_STALL_MARGIN", STALL_MARGIN))


def _lab_of(item: pytest.Item):
    return labs.by_slug(Path(str(item.path)).parent.name)


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
        # The learner's code is what runs past every limit: a failed check, not one that could not grade.
        raise CheckStalled(f"«{_title(item.nodeid)}» was still running {limit:.0f} s after it "
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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Report each check that a stalled one kept from starting as not run, so the count covers every check."""
    for nodeid, stalled in _NOT_STARTED:
        checkreport.write({"nodeid": nodeid, "outcome": "failed", "title": _title(nodeid),
                           "symptom": f"not run: the checks stopped after «{stalled}», whose code never returned",
                           "could_not_grade": False, "busy": False, "seconds": 0.0})


def pytest_collection_modifyitems(items) -> None:
    for item in items:
        doc = (getattr(item.obj, "__doc__", None) or "").strip().splitlines()
        _TITLES[item.nodeid] = doc[0] if doc else item.name


def _title(nodeid: str) -> str:
    return _TITLES.get(nodeid, nodeid.rsplit("::", 1)[-1])

