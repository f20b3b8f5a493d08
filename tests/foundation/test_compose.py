"""docker-compose.yml is valid and starts what the embedded stack starts, with the same settings."""

import subprocess
import sys
from pathlib import Path

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


def test_workshop_services_use_the_lab_entrypoint_and_clock():
    """The worker runs labs/'s entrypoint; every workshop service uses the same clock and servers."""
    services = compose()["services"]
    assert services["worker"]["command"] == ["bash", "labs/lab1_inherited_limit/entrypoint.sh"]
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
