"""The dev container starts a ready workshop: valid against the dev container schema, offline, and running `make workshop`."""

from __future__ import annotations

import json
import shlex

# Installed with the test extras, as a dependency of check-jsonschema.
import jsonschema
from docs_support import ROOT

CONFIG = ROOT / ".devcontainer" / "devcontainer.json"
SCHEMA = ROOT / "tests" / "docs" / "schemas" / "devContainer.base.schema.json"


def validator():
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return jsonschema.Draft201909Validator(schema)


def problems(config: dict) -> list[str]:
    """Return every way a configuration breaks the dev container schema, as readable lines."""
    return [f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message}"
            for error in validator().iter_errors(config)]


def test_devcontainer_json_follows_the_dev_container_schema():
    """.devcontainer/devcontainer.json is valid against the vendored dev container schema, with no network."""
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    found = problems(config)
    assert not found, "devcontainer.json breaks the dev container schema:\n" + "\n".join(found)


def test_the_schema_rejects_a_misspelt_key():
    """The vendored schema really checks: a misspelt lifecycle command is reported, not ignored."""
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    config["postCreateComand"] = config.pop("postCreateCommand")
    assert problems(config), "a configuration with a misspelt key passed the schema"


def test_a_new_container_runs_make_workshop_once_and_starts_the_stack_on_every_start():
    """Creating the container installs a Redis server and sets the workshop up; a restarted container gets its servers back."""
    config = json.loads(CONFIG.read_text(encoding="utf-8"))
    steps = [shlex.split(step) for step in config["postCreateCommand"].split("&&")]
    assert steps[-1] == ["make", "workshop"], config["postCreateCommand"]
    # Python 3.13 has no Redis wheel: the stack runs an installed redis-server (budgetlab.stack.binaries).
    assert any("redis-server" in step and "install" in step for step in steps), config["postCreateCommand"]
    assert "stack up" in config.get("postStartCommand", ""), "a restarted container would have no PostgreSQL or Redis"
