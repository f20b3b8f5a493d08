"""The one afternoon behind lab 6's checks (budgetlab.stories.lab6), played once with the target's code."""

from __future__ import annotations

import pytest

from budgetlab.harness.grading import could_not_start
from budgetlab.harness.modelserver import ModelService
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.stories import lab6


@pytest.fixture(scope="session")
def afternoon(target_dir, stack_ready, tmp_path_factory) -> lab6.Afternoon:
    """Play the afternoon once; every check reads its endings, after everything has been stopped."""
    folder = tmp_path_factory.mktemp("lab6")
    with ModelService(folder, lab6.time_scale()) as service, Rig(target_dir, label="check") as rig, rig.django():
        try:
            return lab6.play_afternoon(rig, service, rig.queue(), folder / "worker.log", hold_a_write=True)
        except WorkerDidNotStart as exc:
            raise could_not_start(target_dir, exc) from None
