"""Fixtures of the lab-1 checks: three runs of the target's entrypoint.sh, started once, probed at once.

Five masters take seconds of CPU to start on a two-core machine, so the
checks share three fleets instead of starting one per check: the
container as deployed, the container with the budget overridden from the
environment, and a copy whose settings.py says another default budget (a
reviewer's edit, which must change what the transactional queues get).
Every probe is sent as soon as its fleet is ready, and the first fleet's
probes run while the second one starts; each check then waits only for
its own fleet and probes. The third fleet starts when its check asks for
it, after the timed probes of the others have settled. A probe meant to be killed sleeps half as long again as the hard
limit, so that a late timer on a busy machine still catches it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from lab1_measure import (CHANGED, OVERRIDE_HARD, OVERRIDE_SOFT, Fleet, Probe, start_one_after_another, stop_all,
                          with_changed_budget)

from budgetlab.stories.lab1 import BATCH, HARD_VARIABLE, INTERACTIVE, QUEUES, SOFT_VARIABLE, TRANSACTIONAL


@dataclass
class Probes:
    """Every probe of the lab-1 checks, by purpose and queue."""

    deployed: Fleet
    overridden: Fleet
    changed: Fleet
    how_changed: str   # what the changed fleet's copy of settings.py says differently
    within_budget: dict[str, Probe] = field(default_factory=dict)   # plain, 200 s: past 120, within 600
    past_budget: dict[str, Probe] = field(default_factory=dict)     # plain, 1400 s: well past 600 and 900
    decorated: dict[str, Probe] = field(default_factory=dict)       # decorated 200/250, 500 s
    agents: dict[str, Probe] = field(default_factory=dict)          # plain: 1800 s on batch, 130 s on interactive
    overrides: dict[str, Probe] = field(default_factory=dict)       # plain, 700 s, overridden fleet
    changes: dict[str, Probe] = field(default_factory=dict)         # plain, well past the changed budget, changed fleet


@pytest.fixture(scope="session")
def probes(target_dir, tmp_path_factory):
    logs = tmp_path_factory.mktemp("lab1")
    deployed = Fleet(target_dir, logs / "deployed.log")
    overridden = Fleet(target_dir, logs / "overridden.log",
                       {SOFT_VARIABLE: f"{OVERRIDE_SOFT:g}", HARD_VARIABLE: f"{OVERRIDE_HARD:g}"})
    copy = with_changed_budget(target_dir, tmp_path_factory.mktemp("lab1-changed"))
    changed = Fleet(copy.root, logs / "changed.log", lazy=True)
    found = Probes(deployed, overridden, changed, copy.how)

    def send(fleet: Fleet) -> None:
        if fleet is changed:
            for queue in TRANSACTIONAL:
                found.changes[queue] = fleet.send(queue, "plain", 1.5 * max(CHANGED.values()) + 100)
        elif fleet is deployed:
            for queue in TRANSACTIONAL:
                found.within_budget[queue] = fleet.send(queue, "plain", 200)
                found.past_budget[queue] = fleet.send(queue, "plain", 1400)
            found.agents[BATCH] = fleet.send(BATCH, "plain", 1800)
            found.agents[INTERACTIVE] = fleet.send(INTERACTIVE, "plain", 130)
            for queue in QUEUES:
                found.decorated[queue] = fleet.send(queue, "decorated", 500)
        else:
            for queue in TRANSACTIONAL:
                found.overrides[queue] = fleet.send(queue, "plain", 700)

    finish = start_one_after_another([deployed, overridden, changed], send)
    try:
        yield found
    finally:
        finish()
        stop_all([deployed, overridden, changed])
