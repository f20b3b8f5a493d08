"""The one afternoon behind lab 8's checks (budgetlab.stories.lab8), played once with the target's code."""

from __future__ import annotations

import pytest

from budgetlab import labs
from budgetlab.harness.grading import MachineBusy, could_not_start
from budgetlab.harness.modelserver import ModelService
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.paths import logs_dir
from budgetlab.stories import lab8


@pytest.fixture(scope="session")
def afternoon(target_dir, stack_ready, tmp_path_factory) -> lab8.Afternoon:
    """Play the afternoon once; every check reads its questions, calls and queued messages afterwards."""
    folder = tmp_path_factory.mktemp("lab8")
    with ModelService(folder, lab8.time_scale()) as service, Rig(target_dir, label="check") as rig, rig.django():
        try:
            afternoon = lab8.play_afternoon(rig, service, rig.queue(), folder / "worker.log")
        except WorkerDidNotStart as exc:
            raise could_not_start(target_dir, exc) from None
        except lab8.WebProcessEnded as exc:
            raise AssertionError(f"{exc}: {lab8.last_error(rig.folder() / 'web.log')}") from None
    # What every check below rests on, kept whatever they find (see lab8.record).
    (logs_dir() / f"check-{labs.by_slug(lab8.SLUG).number}-afternoon.txt").write_text(lab8.record(afternoon))
    return afternoon


@pytest.fixture
def rush(afternoon) -> lab8.Afternoon:
    """The afternoon, for the checks about refusals: they cannot grade one whose rush never came (lab8.rush_missing).

    Only they: how each question ended, and when its attempts started, is
    the code's whatever the machine did to the rush, so a fault there
    is still the verdict (exit 1) beside them.
    """
    missing = lab8.rush_missing(afternoon)
    if missing:
        raise MachineBusy(missing)
    return afternoon
