"""Fixtures of the lab-1 checks: two runs of the target's entrypoint.sh, started once, probed at once.

Five masters take seconds of CPU to start on a two-core machine, so the
checks share two fleets instead of starting one per check. The main
fleet runs a copy whose settings.py says another default budget (a
reviewer's edit): every deployed check reads it, and the budget it
enforces on the transactional queues must be the copy's, which shows
that settings.py is the one in force. The second fleet is the target
as deployed with the budget overridden from the environment. What the
target's own settings.py gives is read as Celery reads it, in a
process of its own, with no override set. Every probe is sent as soon
as its fleet is ready; the main fleet's probes run while the second one
starts. A probe meant to meet a limit sleeps until that limit's
allowance for lateness has passed (`outlasting`), so that a timer a busy
machine delayed still reaches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from lab1_measure import (DECORATED_HARD, LONGEST_HARD, OVERRIDE_HARD, OVERRIDE_SOFT, Fleet, Probe, SettingsRead,
                          outlasting, start_one_after_another, stop_all, with_changed_budget)

from budgetlab.stories.lab1 import (BATCH, BATCH_AT_LEAST, HARD_VARIABLE, INTERACTIVE, INTERACTIVE_AT_MOST, QUEUES,
                                    SOFT_VARIABLE, TRANSACTIONAL)

# The plain probe that must finish within the budget: 280 s past the inherited 120 s, so that a busy
# machine that delays that limit by half a wall second still has it reach the probe. A machine that keeps
# it sleeping into the main fleet's budget (the copy's 480 s) shows that budget, which the check accepts.
WITHIN_BUDGET = 400.0


@dataclass
class Probes:
    """Every probe of the lab-1 checks, by purpose and queue."""

    main: Fleet                  # the target with settings.py's default budget changed, as deployed
    overridden: Fleet            # the target as it is, with the budget overridden from the environment
    how_changed: str             # what the main fleet's copy of settings.py says differently
    settings: SettingsRead       # the budget the target's own settings.py gives
    changed_settings: SettingsRead   # the budget the main fleet's copy of settings.py gives
    within_budget: dict[str, Probe] = field(default_factory=dict)   # plain, past 120, within either budget
    past_budget: dict[str, Probe] = field(default_factory=dict)     # plain, outlasting the changed budget
    decorated: dict[str, Probe] = field(default_factory=dict)       # decorated 200/250, outlasting 250 s
    agents: dict[str, Probe] = field(default_factory=dict)          # plain, outlasting each queue's bound
    overrides: dict[str, Probe] = field(default_factory=dict)       # plain, outlasting 400 s, overridden fleet


@pytest.fixture(scope="session")
def probes(target_dir, tmp_path_factory):
    logs = tmp_path_factory.mktemp("lab1")
    copy = with_changed_budget(target_dir, tmp_path_factory.mktemp("lab1-changed"))
    main = Fleet(copy.root, logs / "main.log")
    overridden = Fleet(target_dir, logs / "overridden.log",
                       {SOFT_VARIABLE: f"{OVERRIDE_SOFT:g}", HARD_VARIABLE: f"{OVERRIDE_HARD:g}"})
    found = Probes(main, overridden, copy.how, SettingsRead(target_dir), SettingsRead(copy.root))

    def send(fleet: Fleet) -> None:
        if fleet is main:
            # A copy without a hard limit gets the longest probe.
            past_budget = outlasting(min(found.changed_settings.budget()[1] or LONGEST_HARD, LONGEST_HARD))
            for queue in TRANSACTIONAL:
                found.within_budget[queue] = fleet.send(queue, "plain", WITHIN_BUDGET)
                found.past_budget[queue] = fleet.send(queue, "plain", past_budget)
            found.agents[BATCH] = fleet.send(BATCH, "plain", BATCH_AT_LEAST)
            found.agents[INTERACTIVE] = fleet.send(INTERACTIVE, "plain", outlasting(INTERACTIVE_AT_MOST))
            for queue in QUEUES:
                found.decorated[queue] = fleet.send(queue, "decorated", outlasting(DECORATED_HARD))
        else:
            for queue in TRANSACTIONAL:
                found.overrides[queue] = fleet.send(queue, "plain", outlasting(OVERRIDE_HARD))

    finish = start_one_after_another([main, overridden], send)
    try:
        yield found
    finally:
        finish()
        stop_all([main, overridden])
        found.settings.close()
        found.changed_settings.close()
