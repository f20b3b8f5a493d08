"""Hidden checks of lab 7: the deployment will not start a worker whose budgets reach the visibility timeout."""

from __future__ import annotations

import re

from budgetlab.stories.lab7 import HARD_LIMIT, LONG_LIMIT, LONG_TASK


def _numbers(text: str) -> set[float]:
    """Return every number in a text, with thousands separators (1,000 or 1.000 or 1_000) read as such."""
    found = set()
    for raw in re.findall(r"\d[\d,._]*", text):
        plain = raw.rstrip(",._")
        try:
            found.add(float(re.sub(r"[,_]|\.(?=\d{3}\b)", "", plain)))
        except ValueError:
            pass
    return found


def test_the_visibility_timeout_sits_above_the_longest_budget(day):
    """The broker waits longer than the upload's two-hour hard limit before it hands a message out again."""
    timeout = day.visibility_timeout
    assert timeout > HARD_LIMIT, (
        f"the broker hands an unacknowledged upload to another worker after {timeout:g} s, "
        f"while the upload may run {HARD_LIMIT} s")


def test_a_worker_with_a_budget_above_the_timeout_refuses_to_start(day):
    """A worker that would run a task with a ten-day hard limit exits at start-up, naming both numbers."""
    attempt = day.long_budget
    assert not attempt.started, (
        f"a worker whose task {LONG_TASK} may run {LONG_LIMIT} s started, although the broker hands its message "
        f"to another worker after {day.visibility_timeout:g} s")
    assert attempt.returncode not in (0, None), (
        f"the worker that refused to start exited with status {attempt.returncode}; a deployment reads that as success")
    lines = [line for line in attempt.output.splitlines() if LONG_LIMIT in _numbers(line)
             and day.visibility_timeout in _numbers(line)]
    assert lines, (f"the worker refused to start, but no line of its output names both the task's hard limit "
                   f"({LONG_LIMIT} s) and the visibility timeout ({day.visibility_timeout:g} s)")
