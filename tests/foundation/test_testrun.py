"""`make test` runs its tests side by side, the `alone` ones by themselves, and says where its time goes."""

import json
import threading

import pytest

from budgetlab.commands import testrun


class Started(list):
    """The pytest command lines a pass starts (nothing runs); `codes` are their exit codes in turn, else 0."""

    def __init__(self):
        super().__init__()
        self.codes: list[int] = []
        self.envs: list[dict] = []

    def __call__(self, argv, env=None, **kwargs) -> int:
        self.append(argv[argv.index("pytest") + 1:])
        self.envs.append(env or {})
        return self.codes.pop(0) if self.codes else 0


@pytest.fixture(autouse=True)
def logs(monkeypatch, tmp_path):
    """A pass's logs (its output, its tests' seconds) go to a folder of the test's, never the checkout's."""
    folder = tmp_path / "logs"
    folder.mkdir()
    monkeypatch.setattr(testrun.paths, "logs_dir", lambda: folder)
    return folder


@pytest.fixture
def started(monkeypatch):
    calls = Started()
    monkeypatch.setattr(testrun.subprocess, "call", calls)
    return calls


def test_a_pass_runs_side_by_side_then_the_alone_tests_by_themselves(monkeypatch, started):
    """The asked number of processes (loadgroup) for every test not marked `alone`, then the `alone` tests in one process."""
    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "2")
    assert testrun._pytest(["-x"]) == 0
    assert started == [["--durations=15", "-n", "2", "--dist", "loadgroup", "-m", "not alone", "-x"],
                       ["--durations=15", "-m", "alone", "-x"]], started


def test_the_external_pass_narrows_both_halves(monkeypatch, started):
    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "2")
    assert testrun._pytest(["--durations=3"], marker="external") == 0
    first, second = started
    assert first[first.index("-m") + 1] == "(external) and not alone" and second[second.index("-m") + 1] == \
        "(external) and alone", started
    # pytest reads the last --durations, so one given in PYTEST_ARGS overrides the default.
    assert first[0] == "--durations=15" and first[-1] == "--durations=3", first


def test_a_failed_half_fails_the_pass_and_nothing_left_to_run_alone_does_not(monkeypatch, started):
    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "2")
    started.codes.extend([0, testrun.NO_TESTS])
    assert testrun._pytest([]) == 0
    started.codes.extend([1, 0])
    assert testrun._pytest([]) == 1
    started.codes.extend([0, 1])
    assert testrun._pytest([]) == 1


def test_both_halves_of_a_pass_add_to_one_fresh_file_of_seconds_named_after_the_pass(monkeypatch, started, logs):
    """What scripts/test_seconds.py keeps: this pass's tests only, never an earlier run's."""
    from budgetlab.commands import testplan

    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "2")
    old = logs / testplan.SECONDS_LOG.format("external")
    old.write_text('{"tests/gone.py::test_gone": 9.0}')
    testrun._pytest([], {"BUDGETLAB_PASS": "external"}, marker="external")
    assert [env[testplan.SECONDS_VARIABLE] for env in started.envs] == [str(old)] * 2
    assert not old.exists()
    testplan.add_seconds(old, {"a::test_a": 1.0})
    testplan.add_seconds(old, {"b::test_b": 2.0})
    assert testplan.recorded("x", logs / "none.json") == {}
    assert json.loads(old.read_text()) == {"a::test_a": 1.0, "b::test_b": 2.0}


def test_zero_workers_runs_one_process_as_before(monkeypatch, started, capsys):
    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "0")
    assert testrun._pytest(["-x"]) == 0
    assert started == [["--durations=15", "-x"]], started
    assert "$ pytest --durations=15 -x" in capsys.readouterr().out


def test_a_bad_worker_count_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("BUDGETLAB_TEST_WORKERS", "two")
    assert testrun.main([]) == 2
    assert capsys.readouterr().err.strip() == "error: BUDGETLAB_TEST_WORKERS='two' is not a number of processes"


def test_with_no_count_asked_one_process_per_core_and_one_more_run_the_tests(monkeypatch, started):
    """One process per check group, and one for every other test meanwhile."""
    monkeypatch.delenv("BUDGETLAB_TEST_WORKERS", raising=False)
    monkeypatch.setattr(testrun, "cores", lambda: 2)
    assert testrun._pytest([]) == 0
    assert started[0][started[0].index("-n") + 1] == "3", started


def _conftest():
    import importlib.util

    from budgetlab.paths import repo_root

    spec = importlib.util.spec_from_file_location("budgetlab_suite_conftest", repo_root() / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Item:
    """What the collection rules read of a test, and the markers they add."""

    def __init__(self, name, fixtures=(), param=""):
        self.originalname, self.fixturenames, self.markers = name, list(fixtures), []
        self.nodeid = f"tests/x/test_x.py::{name}{f'[{param}]' if param else ''}"

    def add_marker(self, marker):
        self.markers.append(marker)

    def iter_markers(self):
        return [marker.mark for marker in self.markers]

    def group(self):
        return next((mark.args[0] for mark in self.markers if mark.name == "xdist_group"), None)


def _plan(monkeypatch, items, seconds=None, run="first", groups=2, config=None):
    """Run the collection rules on `items` as a pass named `run` with this table; return the items in their new order."""
    conftest = _conftest()
    monkeypatch.setattr(conftest, "CHECK_GROUPS", groups)
    monkeypatch.setattr(conftest, "PASS", run)
    monkeypatch.setattr(conftest, "SECONDS", {item.nodeid: took for item, took in (seconds or {}).items()})
    ordered = list(items)
    conftest.pytest_collection_modifyitems(config, ordered)
    return ordered


def _checks(count, name="test_grader_agrees_on_a_case"):
    return [Item(name, param=f"case{n}") for n in range(count)]


def test_without_a_table_whole_checks_share_one_group_per_core_evenly_and_light_tests_stay_out(monkeypatch):
    """At most one whole check per core beside the other tests: the checks share cores-many groups."""
    checks = [Item(name, param=str(n)) for name in sorted(_conftest().WHOLE_CHECKS) for n in range(3)]
    others = [Item("test_something_else"), Item("test_an_audit", ["audit_venv"])]
    ordered = _plan(monkeypatch, [*checks, *others])
    assert {item.group() for item in checks} == {"whole-checks-1", "whole-checks-2"}
    counts = [sum(item.group() == name for item in checks) for name in ("whole-checks-1", "whole-checks-2")]
    assert abs(counts[0] - counts[1]) <= 1, counts
    assert [item.group() for item in others] == [None, "audit-venvs"]
    assert ordered == [*checks, *others]


def test_checks_are_placed_longest_first_on_the_group_with_the_fewest_recorded_seconds(monkeypatch):
    """A lab 1 check takes five times a lab 5 one: balanced by count, one group ended 55 s after the other."""
    checks = _checks(6)
    seconds = dict(zip(checks, [10.0, 9.0, 4.0, 3.0, 2.0, 2.0]))
    _plan(monkeypatch, checks, {**seconds, Item("test_other"): 100.0}, run="second-python")
    groups = {name: sum(took for item, took in seconds.items() if item.group() == name)
              for name in ("whole-checks-1", "whole-checks-2")}
    assert groups == {"whole-checks-1": 15.0, "whole-checks-2": 15.0}, groups


def test_in_the_first_pass_the_checks_beyond_each_process_share_are_queued_last_for_whoever_is_free(monkeypatch):
    """The other tests ended 110 s before the groups; the shortest checks wait at the end, in no group, longest first."""
    checks, other = _checks(8), Item("test_other")
    seconds = {**dict(zip(checks, [10.0, 10.0, 8.0, 8.0, 3.0, 2.0, 2.0, 1.0])), other: 10.0}
    ordered = _plan(monkeypatch, [checks[7], other, *checks[:7]], seconds)
    # 54 s over three processes: 18 s a group; the other process's 10 s and the four shortest checks (8 s) end even.
    tail = [item for item in checks if item.group() is None]
    assert ordered[-len(tail):] == sorted(tail, key=lambda item: -seconds[item]), ordered
    assert ordered[:-len(tail)] == [item for item in [checks[7], other, *checks[:7]] if item not in tail]
    assert [seconds[item] for item in ordered[-len(tail):]] == [3.0, 2.0, 2.0, 1.0]
    loads = [sum(seconds[item] for item in checks if item.group() == f"whole-checks-{n}") for n in (1, 2)]
    assert loads == [18.0, 18.0], loads


def test_no_check_is_queued_last_in_the_other_passes_or_when_the_other_tests_outweigh_a_share(monkeypatch):
    checks, other = _checks(4), Item("test_other")
    seconds = {**dict(zip(checks, [4.0, 3.0, 2.0, 1.0])), other: 1.0}
    _plan(monkeypatch, [*checks, other], seconds, run="external", groups=1)
    assert {item.group() for item in checks} == {"whole-checks-1"}
    _plan(monkeypatch, [*checks, other], {**seconds, other: 100.0})
    assert None not in {item.group() for item in checks}


def test_a_check_the_table_does_not_know_weighs_the_median_and_one_it_knows_as_short_nothing(monkeypatch):
    """The first pass skips the checks on the other passes' servers: recorded at 0 s, they tip no balance."""
    checks = _checks(4)
    seconds = {checks[0]: 6.0, checks[1]: 4.0, checks[2]: 0.0}
    _plan(monkeypatch, checks, seconds, run="external")
    # Unknown checks[3] weighs 4 s, the median of the known 6, 4 and 0: the groups end even, 6 + 0 and 4 + 4.
    assert checks[0].group() != checks[1].group() == checks[3].group(), [item.group() for item in checks]


def test_chromiums_pages_take_a_check_groups_turn_weighed_in_their_seconds(monkeypatch):
    """Rehearsal #19: the browser sweeps beside two checks starved a lab-8 worker; they join a check group."""
    pages = [Item("test_a_page", ["built_site"]), Item("test_another_page", ["chromium_browser"])]
    checks = _checks(5)
    venvs = Item("test_an_audit", ["audit_venv"])
    seconds = {pages[0]: 2.0, pages[1]: 1.0, **{check: 1.0 for check in checks}}
    _plan(monkeypatch, [pages[0], *checks, pages[1], venvs], seconds, run="second-python")
    assert pages[0].group() == pages[1].group() == "whole-checks-1"
    # The pages' 3 s on their group: four of the five checks go to the other one.
    assert sum(item.group() == "whole-checks-2" for item in checks) == 4
    assert venvs.group() == "audit-venvs"


def test_only_the_tests_a_marker_expression_keeps_are_weighed(monkeypatch):
    """pytest deselects after the collection rules: the other passes' few checks must still be spread evenly."""
    kept = [Item("test_the_solution_passes_on_these_servers", param=str(n)) for n in range(4)]
    for item in kept:
        item.add_marker(pytest.mark.external)
    dropped = Item("test_grader_agrees_on_a_case")
    seconds = {dropped: 9.0, **dict(zip(kept, [5.0, 3.0, 1.0, 1.0]))}
    config = type("Config", (), {"option": type("Option", (), {"markexpr": "external"})()})()
    _plan(monkeypatch, [dropped, *kept], seconds, run="external", config=config)
    # Weighed beside the deselected 9 s check, three of them would share one group: 9 s against 1 s.
    loads = [sum(seconds[item] for item in kept if item.group() == f"whole-checks-{n}") for n in (1, 2)]
    assert loads == [5.0, 5.0], loads


def test_the_kept_table_holds_whole_checks_and_long_tests_by_id_and_the_rest_as_one_sum():
    from budgetlab.commands import testplan

    table = testplan.kept({"t.py::test_grader_agrees_on_a_case[a]": 0.01, "t.py::test_long": 3.04,
                           "t.py::test_short": 0.4, "t.py::test_shorter": 0.2})
    assert table == {"t.py::test_grader_agrees_on_a_case[a]": 0.0, "t.py::test_long": 3.0,
                     testplan.REST: 0.6}, table


def test_every_whole_check_named_in_conftest_exists():
    """A renamed test would silently leave its group: every name in WHOLE_CHECKS is a test function."""
    import re

    from budgetlab.paths import repo_root

    defined = {match for path in (repo_root() / "tests").rglob("test_*.py")
               for match in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M)}
    named = _conftest().WHOLE_CHECKS
    assert named <= defined, f"not a test: {sorted(named - defined)}"


class Node:
    """What the check-group guard reads of a pytest-xdist worker: its config's --dist."""

    def __init__(self, dist):
        self.config = type("Config", (), {"getvalue": lambda self, name: dist})()


def test_a_run_whose_check_groups_never_reach_pytest_xdist_stops_at_once():
    """pytest-xdist issue #1386: with pytest 9.2 the groups were silently dropped, and every process ran checks."""
    conftest = _conftest()
    check = "tests/maintainers/test_lab_set.py::test_grader_agrees_on_a_case[lab5-xact_view]"
    other = "tests/maintainers/test_lab_set.py::test_grader_agrees_on_a_case[lab5-other]"
    with pytest.raises(pytest.exit.Exception, match="#1386"):
        conftest.pytest_xdist_node_collection_finished(Node("loadgroup"), [check, "tests/test_x.py::test_y"])
    conftest.pytest_xdist_node_collection_finished(Node("loadgroup"), [f"{check}@whole-checks-1"])
    # A check queued last has no group by design, beside checks that have theirs.
    conftest.pytest_xdist_node_collection_finished(Node("loadgroup"), [f"{check}@whole-checks-1", other])
    conftest.pytest_xdist_node_collection_finished(Node("load"), [check])


def test_the_passes_after_the_first_run_side_by_side_the_first_on_every_core(monkeypatch, capsys):
    """Two more passes on two cores: side by side, the first with a check group per core (and one process more), the
    other with one group; both reported in order, a failure of one kept and the other run all the same."""
    monkeypatch.delenv("BUDGETLAB_TEST_WORKERS", raising=False)
    monkeypatch.delenv(testrun.GROUPS_VARIABLE, raising=False)
    monkeypatch.setattr(testrun, "cores", lambda: 2)
    both_running, seen = threading.Barrier(2, timeout=10), []

    def call(argv, env=None, **kwargs):
        argv = argv[argv.index("pytest") + 1:]
        marker = argv[argv.index("-m") + 1]
        seen.append((marker, argv[argv.index("-n") + 1] if "-n" in argv else None))
        if marker.endswith("and not alone"):
            both_running.wait()  # each pass's side-by-side half waits for the other's: they run at once
        return 1 if marker == "(external) and not alone" else 0

    monkeypatch.setattr(testrun.subprocess, "call", call)
    passes = [testrun.Pass("on A", "python", {}, "second_python"), testrun.Pass("on B", "python", {}, "external")]
    assert testrun.run_passes(passes, []) == 1
    assert sorted(seen) == [("(external) and alone", None), ("(external) and not alone", "2"),
                            ("(second_python) and alone", None), ("(second_python) and not alone", "3")], seen
    out = capsys.readouterr().out
    assert out.index("==== pass 2: on A") < out.index("==== pass 3: on B: exit 1"), out
