"""Kontor and the lab code read like an ordinary Django + Celery project: nothing of the workshop is imported."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORY_TREES = [ROOT / "src" / "kontor", ROOT / "labs", ROOT / "solutions"]


def _sources():
    """Yield (path, Python source) for every module and notebook code cell of Kontor and the labs."""
    for tree in STORY_TREES:
        for path in sorted(tree.rglob("*")):
            if "__pycache__" in path.parts or ".ipynb_checkpoints" in path.parts:
                continue
            if path.suffix == ".py":
                yield path, path.read_text(encoding="utf-8")
            elif path.suffix == ".ipynb":
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                yield path, "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


def _workshop_imports(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        found += [name for name in names if name == "budgetlab" or name.startswith("budgetlab.")]
    return found


def test_no_time_scale_in_kontor_or_the_labs():
    """Kontor and the lab code write time as production code does: nothing converts to or from a workshop clock."""
    words = ("timescale", "to_wall", "to_production", "TIME_SCALE")
    offenders = sorted(str(path.relative_to(ROOT)) for path, source in _sources() if any(w in source for w in words))
    assert not offenders, f"these convert time for the workshop: {offenders}"


def test_no_workshop_imports_in_kontor_or_the_labs():
    """No module or notebook under src/kontor, labs/ or solutions/ imports budgetlab."""
    offenders = {str(path.relative_to(ROOT)): names for path, source in _sources()
                 if (names := _workshop_imports(source))}
    assert not offenders, f"these import the workshop's tooling: {offenders}"


def test_kontor_starts_with_budgetlab_unimportable():
    """Django set-up, the Celery app and the stand-in clients load while `import budgetlab` would fail."""
    code = ("import sys; sys.modules['budgetlab'] = None\n"
            "import django; django.setup()\n"
            "from kontor.celery_app import app; app.loader.import_default_modules(); app.conf.broker_url\n"
            "from kontor import clients, llm\n"
            "print(clients.latency('model', 'row-1') > 0)\n")
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="kontor.settings",
               KONTOR_DATABASE_URL="postgresql://kontor@127.0.0.1:1/kontor", KONTOR_BROKER_URL="redis://127.0.0.1:1/0")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr[-2000:]


def test_kontor_without_a_database_says_which_variable():
    """Kontor never guesses a database: without KONTOR_DATABASE_URL it names the variable to set."""
    env = {name: value for name, value in os.environ.items() if name != "KONTOR_DATABASE_URL"}
    env["DJANGO_SETTINGS_MODULE"] = "kontor.settings"
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "KONTOR_DATABASE_URL is not set" in result.stderr, result.stderr[-2000:]


def test_a_worker_without_a_broker_refuses_to_start():
    """A Kontor worker with no KONTOR_BROKER_URL exits and says so, instead of trying Celery's localhost default."""
    env = {name: value for name, value in os.environ.items() if name != "KONTOR_BROKER_URL"}
    env.update(DJANGO_SETTINGS_MODULE="kontor.settings", KONTOR_DATABASE_URL="postgresql://kontor@127.0.0.1:1/kontor")
    result = subprocess.run([sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker", "-c", "1",
                             "--without-mingle", "--without-gossip", "--without-heartbeat"],
                            env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode != 0 and "KONTOR_BROKER_URL is not set" in result.stderr, result.stderr[-2000:]
