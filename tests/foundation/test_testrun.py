"""`make test` says where its time goes: every pytest pass it starts ends with the 15 slowest tests."""

from budgetlab.commands import testrun


def test_every_pass_prints_its_fifteen_slowest_tests(monkeypatch, capsys):
    """Both passes (the whole suite, the external one) ask pytest for --durations=15; an own value still wins."""
    started = []
    monkeypatch.setattr(testrun.subprocess, "call", lambda argv, env=None: started.append(argv) or 0)
    assert testrun._pytest(["-x"]) == 0
    assert testrun._pytest(["-m", "external", "--durations=3"]) == 0
    first, second = (argv[argv.index("pytest") + 1:] for argv in started)
    assert first == ["--durations=15", "-x"], first
    # pytest reads the last --durations, so one given in PYTEST_ARGS overrides the default.
    assert second[0] == "--durations=15" and second[-1] == "--durations=3", second
    assert "$ pytest --durations=15 -x" in capsys.readouterr().out
