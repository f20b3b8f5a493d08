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
