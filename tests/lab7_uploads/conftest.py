"""The one day behind lab 7's checks: two real workers on one queue, four delivery plans, effects counted after."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories import lab7

# Files of ten model minutes each. Six are an hour of work, inside the two-hour budget, so a
# forced redelivery lands while the first run still works and a kill lands mid-job; three
# are half an hour, so an upload delivered once (or twice at once) is not redelivered by
# any visibility timeout of an hour or more.
LONG, SHORT = 6, 3
MODEL_SECONDS = 600.0
KILL_AFTER = 2


@dataclass
class Day:
    """How each delivery plan went."""

    raced: lab7.Outcome
    once: lab7.Outcome
    redelivered: lab7.Outcome
    killed: lab7.Outcome
    long_budget: lab7.StartAttempt
    long_retry: lab7.StartAttempt
    visibility_timeout: float
    file_seconds: float = MODEL_SECONDS  # the model time each file of an upload takes


@pytest.fixture(scope="session")
def day(target_dir, stack_ready) -> Day:
    """Replay the four delivery plans on two workers with the target's code; read the effects once."""
    from budgetlab.harness.rig import Rig, WorkerDidNotStart

    # Lab 7 waits out hour-long visibility timeouts: it runs on its own, faster clock.
    with lab7.lab_clock(), Rig(target_dir, label="check") as rig, rig.django():
        try:
            visibility_timeout = lab7.configured_visibility_timeout()
        except Exception as exc:  # the learner's settings are graded only if they import
            raise CouldNotGrade(f"{lab7.SLUG}/settings.py does not import: {type(exc).__name__}: {exc}") from None
        # The start-up check's workers boot beside the day's two.
        long_budget = lab7.start_with_long_budget(rig, "budget")
        long_retry = lab7.start_with_long_budget(rig, "retry")
        try:
            workers = lab7.Day(rig, MODEL_SECONDS)
        except WorkerDidNotStart as exc:
            long_budget(), long_retry()
            # A start-up check may refuse the deployment itself: that is the code's verdict, not a grading failure.
            raise AssertionError(f"the upload workers did not start with the {target_dir.name} code: "
                                 f"{exc.tree.last_error() or exc}") from None
        raced = workers.run_raced(SHORT)
        once = workers.run_once(SHORT)
        redelivered = workers.run_redelivered(LONG)
        killed = workers.run_killed(LONG, KILL_AFTER)
        return Day(raced=raced, once=once, redelivered=redelivered, killed=killed, long_budget=long_budget(),
                   long_retry=long_retry(), visibility_timeout=visibility_timeout)
