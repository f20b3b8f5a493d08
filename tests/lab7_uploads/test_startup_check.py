"""Hidden checks of lab 7: the deployment will not start a worker whose budgets reach the visibility timeout."""

from __future__ import annotations

import re

from budgetlab.stories.lab7 import HARD_LIMIT, LONG_LIMIT, LONG_TASK, RETRY_DELAY, RETRY_TASK, refused_how


def _numbers(text: str) -> set[float]:
    """Return every number in a text: thousands separators (1,000 or 1.000 or 1_000) and 1.2e+06 read as such."""
    found = set()
    for raw, exponent in re.findall(r"(\d[\d,._]*)([eE][+-]?\d+)?", text):
        plain = raw.rstrip(",._")
        for digits in {re.sub(r"[,_]|\.(?=\d{3}\b)", "", plain), plain.replace(",", "").replace("_", "")}:
            try:
                found.add(float(digits + exponent))
            except ValueError:
                pass
    return found


def test_the_visibility_timeout_sits_above_the_longest_budget(day):
    """The broker waits longer than the upload's two-hour hard limit before it hands a message out again."""
    timeout = day.visibility_timeout
    assert timeout > HARD_LIMIT, (
        f"the broker hands an unacknowledged upload to another worker after {timeout:g} s, "
        f"while the upload may run {HARD_LIMIT} s")


def _refused(attempt, timeout: float, task: str, number: int, what: str) -> None:
    assert not attempt.started, (
        f"a worker whose task {task} {what} {number} s started, although the broker hands its message "
        f"to another worker after {timeout:g} s")
    assert attempt.returncode not in (0, None), refused_how(attempt)
    lines = [line for line in attempt.output.splitlines() if number in _numbers(line) and timeout in _numbers(line)]
    assert lines, (f"the worker refused to start, but no line of its output names both the task's {number} s "
                   f"and the visibility timeout ({timeout:g} s)")


def test_a_worker_with_a_budget_above_the_timeout_refuses_to_start(day):
    """A worker that would run a task with a ten-day hard limit exits at start-up, naming both numbers."""
    _refused(day.long_budget, day.visibility_timeout, LONG_TASK, LONG_LIMIT, "may run")


def test_a_worker_whose_retry_waits_past_the_timeout_refuses_to_start(day):
    """A worker with a task that retries after fourteen days exits at start-up, naming both numbers."""
    _refused(day.long_retry, day.visibility_timeout, RETRY_TASK, RETRY_DELAY, "retries after")
