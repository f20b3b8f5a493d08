"""`make test` runs its tests side by side, the `alone` ones by themselves, and says where its time goes."""

import pytest

from budgetlab.commands import testrun


class Started(list):
    """The pytest command lines a pass starts (nothing runs); `codes` are their exit codes in turn, else 0."""

    def __init__(self):
        super().__init__()
        self.codes: list[int] = []

    def __call__(self, argv, env=None) -> int:
        self.append(argv[argv.index("pytest") + 1:])
        return self.codes.pop(0) if self.codes else 0


@pytest.fixture
def started(monkeypatch):
    calls = Started()
    monkeypatch.setattr(testrun.subprocess, "call", calls)
    return calls


def test_a_pass_runs_side_by_side_then_the_alone_tests_by_themselves(monkeypatch, started):
    """One process per core (loadgroup) for every test not marked `alone`, then the `alone` tests in one process."""
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


def test_the_side_by_side_half_gets_one_check_slot_per_core_and_the_slots_go_afterwards(monkeypatch):
    """One process more than cores runs tests, but whole checks get one slot per core; the slots' folder goes."""
    import os

    monkeypatch.delenv("BUDGETLAB_TEST_WORKERS", raising=False)
    monkeypatch.setattr(testrun, "cores", lambda: 2)
    seen = []
    monkeypatch.setattr(testrun.subprocess, "call", lambda argv, env=None: seen.append((argv, env)) or 0)
    assert testrun._pytest([]) == 0
    (beside, slots), (alone, rest) = seen
    assert beside[beside.index("-n") + 1] == "3", beside
    folder, count = slots[testrun.CHECK_SLOTS].rsplit(":", 1)
    assert count == "2" and not os.path.exists(folder)
    assert rest is None or testrun.CHECK_SLOTS not in rest


def test_a_whole_check_waits_for_a_free_slot(monkeypatch, tmp_path):
    """With two slots, a third holder waits until one of the first two lets go."""
    import threading

    monkeypatch.setenv(testrun.CHECK_SLOTS, f"{tmp_path}:2")
    first, second = testrun.check_slot(), testrun.check_slot()
    first.__enter__()
    second.__enter__()
    entered = threading.Event()

    def third():
        with testrun.check_slot():
            entered.set()
    waiter = threading.Thread(target=third)
    waiter.start()
    assert not entered.wait(0.5), "a third check took a slot while two were held"
    second.__exit__(None, None, None)
    assert entered.wait(10), "the third check never got the slot that was let go"
    waiter.join()
    first.__exit__(None, None, None)


def test_every_whole_check_named_in_conftest_exists():
    """A renamed test would silently leave the slots: every name in WHOLE_CHECKS is a test function."""
    import re

    from budgetlab.paths import repo_root

    conftest = repo_root() / "tests" / "conftest.py"
    names = set(re.findall(r'"(test_\w+)"', conftest.read_text().split("WHOLE_CHECKS = ", 1)[1].split("}", 1)[0]))
    defined = {match for path in (repo_root() / "tests").rglob("test_*.py")
               for match in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M)}
    assert names and names <= defined, f"not a test: {sorted(names - defined)}"
