"""`make test` runs its tests side by side, the `alone` ones by themselves, and says where its time goes."""

import threading

import pytest

from budgetlab.commands import testrun


class Started(list):
    """The pytest command lines a pass starts (nothing runs); `codes` are their exit codes in turn, else 0."""

    def __init__(self):
        super().__init__()
        self.codes: list[int] = []

    def __call__(self, argv, env=None, **kwargs) -> int:
        self.append(argv[argv.index("pytest") + 1:])
        return self.codes.pop(0) if self.codes else 0


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

    def __init__(self, name, fixtures=()):
        self.originalname, self.fixturenames, self.markers = name, list(fixtures), []

    def add_marker(self, marker):
        self.markers.append(marker)

    def group(self):
        return next((mark.args[0] for mark in self.markers if mark.name == "xdist_group"), None)


def test_whole_checks_go_into_one_group_per_core_and_light_tests_stay_out(monkeypatch):
    """At most one whole check per core at a time, however many processes: the checks share cores-many groups."""
    conftest = _conftest()
    monkeypatch.setattr(conftest, "CHECK_GROUPS", 2)
    checks = [Item(name) for name in sorted(conftest.WHOLE_CHECKS) for _ in range(3)]
    others = [Item("test_something_else"), Item("test_an_audit", ["audit_venv"])]
    conftest.pytest_collection_modifyitems(None, [*checks, *others])
    assert {item.group() for item in checks} == {"whole-checks-1", "whole-checks-2"}
    counts = [sum(item.group() == name for item in checks) for name in ("whole-checks-1", "whole-checks-2")]
    assert abs(counts[0] - counts[1]) <= 1, counts
    assert [item.group() for item in others] == [None, "audit-venvs"]


def test_chromiums_pages_take_a_check_groups_turn_and_weigh_in_its_balance(monkeypatch):
    """Rehearsal #19: the browser sweeps beside two checks starved a lab-8 worker; they join a check group."""
    conftest = _conftest()
    monkeypatch.setattr(conftest, "CHECK_GROUPS", 2)
    monkeypatch.setattr(conftest, "HEAVY_SHARED", {"docs-site": 3})
    pages = [Item("test_a_page", ["built_site"]), Item("test_another_page", ["chromium_browser"])]
    checks = [Item("test_grader_agrees_on_a_case") for _ in range(5)]
    venvs = Item("test_an_audit", ["audit_venv"])
    conftest.pytest_collection_modifyitems(None, [pages[0], *checks, pages[1], venvs])
    assert pages[0].group() == pages[1].group() == "whole-checks-1"
    # Three checks' weight on the pages' group: the first three checks go to the other one.
    assert [item.group() for item in checks] == ["whole-checks-2"] * 3 + ["whole-checks-1", "whole-checks-2"]
    assert venvs.group() == "audit-venvs"


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
    with pytest.raises(pytest.exit.Exception, match="#1386"):
        conftest.pytest_xdist_node_collection_finished(Node("loadgroup"), [check, "tests/test_x.py::test_y"])
    conftest.pytest_xdist_node_collection_finished(Node("loadgroup"), [f"{check}@whole-checks-1"])
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
