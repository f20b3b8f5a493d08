"""How `make test` spreads its heaviest tests over the machine: check groups weighed in recorded seconds, and a tail.

Tests that play a whole check (and shared groups that load the cores as
much) run in one pytest-xdist group per core, each group in one process,
test after test; the pass's one process more runs every other test
meanwhile (tests/conftest.py, testrun.side_by_side). Two things made the
first pass longer than its work:

- Groups balanced by count: a lab 1 check takes five times a lab 5
  check, a run's transcript twice a check, so one group ended 55 s after
  the other (rehearsal of 2026-12-06: 627 s and 573 s).
- An idle process: the other tests ended 110 s before the groups, and
  two checks alone keep about one of the two cores busy (a lab 8 check
  used 4.3 s of CPU in 8.7 s).

So units are placed longest first, each on the group that carries the
fewest recorded seconds, up to an equal share of the whole pass per
process; in the first pass, the checks that do not fit (the shortest)
are queued after everything else, one by one, and whichever process runs
out of work first takes the next. At most as many checks as the pass has
processes then run at once, in its last minute or two, where two checks
and the other tests ran before. In the next rehearsal the three processes
ran 496, 496 and 498 s of tests.

The seconds come from a run of the suite: each pass writes what each of
its tests took to the logs folder (tests/conftest.py), and
scripts/test_seconds.py keeps them in tests/test_seconds.json, a table
per pass. A check the table does not know weighs as much as the median
check it does; any other test, nothing.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab.paths import repo_root

# Tests that play a lab's whole check or run and judge its verdict (tests/conftest.py groups them).
WHOLE_CHECKS = {"test_grader_agrees_on_a_case", "test_stored_transcript_matches_a_fresh_run",
                "test_the_solution_passes_on_these_servers",
                "test_the_starter_fails_on_these_servers", "test_the_lab1_solution_passes_on_celery_57"}

SECONDS_FILE = Path("tests") / "test_seconds.json"
# Shorter tests are kept as one sum (whole checks always by id: one a pass skips weighs nothing there):
# they never decide a balance, and the file stays short.
KEPT_FROM = 1.0
REST = "(every shorter test)"
# The pass whose table is used: BUDGETLAB_PASS's value (testrun), or this for the first pass.
FIRST = "first"
# What each pass of `make test` measured, in the logs folder: testrun names the file in SECONDS_VARIABLE,
# tests/conftest.py adds to it as each half of the pass ends, scripts/test_seconds.py reads it.
SECONDS_LOG = "test-seconds-{}.json"
SECONDS_VARIABLE = "BUDGETLAB_TEST_SECONDS"


def base_id(nodeid: str) -> str:
    """Return a test's id without pytest-xdist's group suffix (`...@whole-checks-1`), as pytest-xdist splits it."""
    return nodeid.rpartition("@")[0] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


def add_seconds(path: Path, seconds: dict[str, float]) -> None:
    """Add what these tests took to the file at `path` (each half of a pass writes its own tests)."""
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    path.write_text(json.dumps({**known, **seconds}, indent=0, sort_keys=True) + "\n")


def is_whole_check(test: str) -> bool:
    """Whether a test id (without its group suffix) names a whole check."""
    return test.split("::")[-1].split("[")[0] in WHOLE_CHECKS


def recorded(run: str, path: Path | None = None) -> dict[str, float]:
    """Return the kept seconds per test id of one pass ({} without a file, or without a table for that pass)."""
    path = path or repo_root() / SECONDS_FILE
    try:
        table = json.loads(path.read_text()).get(run)
        return {str(key): float(value) for key, value in table.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def kept(seconds: dict[str, float]) -> dict[str, float]:
    """Return one pass's table to keep: whole checks and longer tests by id, sorted, and the rest as one sum."""
    keep = {name for name, value in seconds.items() if value >= KEPT_FROM or is_whole_check(name)}
    table = {name: round(seconds[name], 1) for name in sorted(keep)}
    table[REST] = round(sum(value for name, value in seconds.items() if name not in keep), 1)
    return table


@dataclass
class Unit:
    """What goes into a check group whole: one check, or every test of a heavy shared group."""

    items: list
    seconds: float
    shared: bool = False


@dataclass
class Plan:
    """Where each unit went: groups[i] holds the units of `whole-checks-{i + 1}`; tail, the checks queued last."""

    groups: list[list[Unit]]
    tail: list[Unit] = field(default_factory=list)


def place(units: list[Unit], groups: int, share: float | None) -> Plan:
    """Place units longest first, each on the lightest group; with a share, a check that fits nowhere goes to the tail.

    A shared group's unit always goes into a group: its tests share a
    fixture made once per process.
    """
    plan = Plan([[] for _ in range(groups)])
    loads = [0.0] * groups
    for unit in sorted(units, key=lambda unit: -unit.seconds):
        lightest = loads.index(min(loads))
        if share is not None and not unit.shared and loads[lightest] + unit.seconds > share:
            plan.tail.append(unit)
            continue
        plan.groups[lightest].append(unit)
        loads[lightest] += unit.seconds
    return plan


def share_of(all_seconds: float, group_seconds: float, groups: int) -> float | None:
    """Return each process's equal share of the pass, or None when the other tests alone take more than one.

    A pass runs its groups and one process more. When the other tests fill
    that one past its share, the groups end first anyway, and a check
    queued last would only wait behind them.
    """
    share = all_seconds / (groups + 1)
    return share if all_seconds - group_seconds < share else None


def plan_items(items: list, groups: int, is_check: Callable[[object], bool], shared_group: Callable[[object], str | None],
               seconds: dict[str, float], with_tail: bool) -> Plan:
    """Plan a collection: the checks, and the items of each heavy shared group, spread over `groups` groups.

    With no table, every check weighs the same and none is queued last:
    how long the other tests take is then unknown.
    """
    def took(item) -> float:
        return seconds.get(base_id(item.nodeid), 0.0)

    known = [seconds[name] for item in items if is_check(item) and (name := base_id(item.nodeid)) in seconds]
    median = statistics.median(known) if known else 1.0
    units: list[Unit] = []
    shared: dict[str, Unit] = {}
    for item in items:
        if (name := shared_group(item)) is not None:
            unit = shared.setdefault(name, Unit([], 0.0, shared=True))
            if not unit.items:
                units.append(unit)
            unit.items.append(item)
            unit.seconds += took(item)
        elif is_check(item):
            units.append(Unit([item], seconds.get(base_id(item.nodeid), median)))
    in_units = {id(item) for unit in units for item in unit.items}
    group_seconds = sum(unit.seconds for unit in units)
    all_seconds = (group_seconds + sum(took(item) for item in items if id(item) not in in_units)
                   + seconds.get(REST, 0.0))
    share = share_of(all_seconds, group_seconds, groups) if with_tail and seconds else None
    return place(units, groups, share)
