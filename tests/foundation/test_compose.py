"""docker-compose.yml is valid and starts what the embedded stack starts, with the same settings."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from budgetlab.inworker import clock
from budgetlab.paths import repo_root
from budgetlab.stack.postgres import SERVER_SETTINGS

COMPOSE = repo_root() / "docker-compose.yml"


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_file_matches_the_compose_schema():
    """check-jsonschema's vendored compose-spec schema accepts the file."""
    result = subprocess.run([str(Path(sys.executable).parent / "check-jsonschema"), "--builtin-schema",
                             "vendor.compose-spec", str(COMPOSE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_has_no_version_key_and_loopback_ports():
    """No obsolete version key; every published port is bound to 127.0.0.1."""
    data = compose()
    assert "version" not in data
    for name, service in data["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_services_wait_for_healthy_servers():
    """The servers have healthchecks and the workshop services wait for them."""
    services = compose()["services"]
    assert {"redis", "postgres", "worker", "flower", "jupyter", "docs"} <= set(services)
    for server in ("postgres", "redis"):
        assert "healthcheck" in services[server]
    for name in ("worker", "jupyter", "docs", "setup"):
        depends = services[name]["depends_on"]
        conditions = {dep: spec["condition"] for dep, spec in depends.items()}
        if name == "worker":
            assert conditions == {"setup": "service_completed_successfully"}
        else:
            assert conditions == {"postgres": "service_healthy", "redis": "service_healthy"}


def test_servers_run_with_the_embedded_settings():
    """PostgreSQL 16 and Redis get the embedded stack's settings and flags."""
    services = compose()["services"]
    assert services["postgres"]["image"] == "postgres:16"
    command = " ".join(services["postgres"]["command"])
    for key, value in SERVER_SETTINGS.items():
        if key not in ("listen_addresses", "unix_socket_directories"):
            assert f"-c {key}={value}" in command, f"compose postgres lacks {key}={value}"
    assert "stats_fetch_consistency" not in command
    redis = services["redis"]["command"]
    assert redis[redis.index("--save") + 1] == "" and redis[redis.index("--appendonly") + 1] == "no"


def runs_lab_code(command: list[str]) -> bool:
    return any(word.startswith("labs/") for word in command)


def test_workshop_services_use_the_lab_entrypoint_and_clock():
    """Every service that runs a file of labs/ starts it through `budgetlab stack exec`; all use one clock and the servers."""
    services = compose()["services"]
    lab_code = {name: service["command"] for name, service in services.items() if runs_lab_code(service.get("command", []))}
    assert "worker" in lab_code
    for name, command in lab_code.items():
        assert command[:4] == ["budgetlab", "stack", "exec", "--"], f"{name} runs lab code off the lab clock: {command}"
        assert all((repo_root() / word).exists() for word in command if word.startswith("labs/")), command
    assert services["setup"]["command"] == ["budgetlab", "stack", "up"]
    for name in ("worker", "jupyter", "docs", "setup"):
        env = services[name]["environment"]
        assert float(env["BUDGETLAB_CLOCK"]) == clock.DEFAULT_FACTOR
        assert env["DATABASE_URL"].startswith("postgresql://") and env["REDIS_URL"].startswith("redis://")


def test_the_image_leaves_local_state_out_and_vendors_the_docs_assets():
    """COPY . . takes no venv or stack data from the host, and the docs service gets a local Mermaid."""
    ignored = {line.strip() for line in (repo_root() / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    assert {".venv/", ".venv-celery57/", ".budgetlab/"} <= ignored
    dockerfile = (repo_root() / "docker" / "Dockerfile").read_text()
    assert "AS docs-assets" in dockerfile and "RUN bash scripts/vendor_docs_assets.sh" in dockerfile
    assert "COPY --from=docs-assets /assets/docs/assets/vendor/ docs/assets/vendor/" in dockerfile


@pytest.mark.stack
def test_the_compose_way_of_starting_lab_code_puts_it_on_the_lab_clock_with_the_labs_importable():
    """What the worker service runs before its script, run here with a probe: lab packages import, time runs at the lab's speed."""
    command = compose()["services"]["worker"]["command"]
    prefix = command[:command.index("--") + 1]
    probe = ("import time; from budgetlab.inworker import labtime; import lab1_worker_container.settings\n"
             "wall, mono = labtime.wall_monotonic(), time.monotonic(); time.sleep(20)\n"
             "print(labtime.wall_monotonic() - wall, time.monotonic() - mono)")
    env = {k: v for k, v in os.environ.items() if k != "BUDGETLAB_CLOCK"}
    result = subprocess.run([str(Path(sys.executable).parent / prefix[0]), *prefix[1:], "python", "-c", probe],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    wall, production = map(float, result.stdout.split())
    assert production >= 20 and wall < 20 * clock.DEFAULT_FACTOR + 1, f"slept {production} s production in {wall} s wall"


def test_the_images_run_a_python_the_workshop_supports():
    """The compose image and the dev container start from a Python between budgetlab.advice's oldest and newest."""
    from budgetlab import advice

    dockerfile = (repo_root() / "docker" / "Dockerfile").read_text()
    devcontainer = (repo_root() / ".devcontainer" / "devcontainer.json").read_text()
    for where, found in (("docker/Dockerfile", re.search(r"^FROM python:3\.(\d+)", dockerfile, re.M)),
                         ("devcontainer.json", re.search(r"devcontainers/python:\d+-3\.(\d+)", devcontainer))):
        assert found and advice.supported((3, int(found.group(1)))), f"{where} starts from an unsupported Python"
