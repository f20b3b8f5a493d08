"""The board's Django settings stay on the facilitator's side: check, workers and Kontor never load them."""

import os
import subprocess
import sys

PROBE = """
import sys
{imports}
loaded = sorted(name for name in sys.modules if name.startswith(("django", "budgetlab.board.")))
print(",".join(loaded))
"""


def loaded_after(imports: str) -> list[str]:
    # Kontor's settings need a database URL to load (nothing connects here).
    env = dict(os.environ, KONTOR_DATABASE_URL="postgresql://kontor@127.0.0.1:1/kontor")
    result = subprocess.run([sys.executable, "-c", PROBE.format(imports=imports)], capture_output=True, text=True,
                            timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    return [name for name in result.stdout.strip().split(",") if name]


def test_the_learner_side_loads_no_django():
    """What `check` imports for the board (client and wire format) is standard library only."""
    loaded = loaded_after("import budgetlab.board.client, budgetlab.cli")
    assert not [name for name in loaded if name.startswith("django")], f"check would load {loaded}"
    assert "budgetlab.board.settings" not in loaded


def test_kontor_and_the_worker_side_never_import_the_board():
    """Kontor's settings and Celery app, and the grading plugin, load nothing of the board."""
    loaded = loaded_after("import kontor.settings, kontor.celery_app, budgetlab.harness.workers")
    board = [name for name in loaded if name.startswith("budgetlab.board")]
    assert not board, f"the worker side loaded {board}"
