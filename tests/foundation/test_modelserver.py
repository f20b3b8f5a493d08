"""The model service speaks enough of OpenAI's API for the official client, on the lab clock, in both modes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from budgetlab.harness.modelserver import ModelService
from budgetlab.harness.workers import on_lab_clock

SCALE = 0.01  # 100x: a 30 s production timeout is 0.3 wall seconds


PROBE = Path(__file__).parent / "probe" / "model_probe.py"


@pytest.fixture
def service(tmp_path):
    with ModelService(tmp_path, SCALE) as started:
        yield started


def _ask(service, calls: int = 1, prompt: str = "Which category fits a train ticket?", **client) -> dict:
    """Ask from a process on the lab clock, as a worker would: each call's answer or error, and the production seconds."""
    env = on_lab_clock(dict(os.environ, BUDGETLAB_CLOCK=str(SCALE), KONTOR_MODEL_BASE_URL=service.base_url,
                            DJANGO_SETTINGS_MODULE="kontor.settings"))
    request = json.dumps({"calls": calls, "prompt": prompt, "client": client})
    result = subprocess.run([sys.executable, str(PROBE), request], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout)


def test_a_healthy_call_answers_through_the_official_client_after_its_latency(service):
    service.set_mode("healthy", latency=20)
    asked = _ask(service)
    assert asked["outcomes"][0].startswith("answer ")
    assert asked["seconds"] >= 20


def test_the_same_prompt_gets_the_same_answer(service):
    service.set_mode("healthy", latency=1)
    first, second = _ask(service, calls=2, prompt="same")["outcomes"]
    assert first == second


def test_a_hung_call_ends_at_the_clients_timeout_in_production_seconds(service):
    service.set_mode("slow", pattern=["hang"])
    asked = _ask(service, timeout=30, max_retries=0)
    assert asked["outcomes"] == ["APITimeoutError"]
    assert 30 <= asked["seconds"] < 30 + 15


def test_a_slow_body_trips_the_read_timeout_too(service):
    service.set_mode("slow", pattern=["slow_body"])
    assert _ask(service, timeout=10, max_retries=0)["outcomes"] == ["APITimeoutError"]


def test_the_clients_default_retries_try_a_hung_call_three_times(service):
    service.set_mode("slow", pattern=["hang"])
    assert _ask(service, timeout=10)["outcomes"] == ["APITimeoutError"]
    assert service.stats()["served"]["hang"] == 3


def test_rate_limits_and_server_errors_reach_the_client_as_their_openai_errors(service):
    service.set_mode("slow", pattern=["rate_limit", "server_error"], retry_after=5)
    assert _ask(service, calls=2, max_retries=0)["outcomes"] == ["RateLimitError", "InternalServerError"]


def test_a_limited_spell_eases_counted_from_its_first_refusal_not_from_the_switch(service):
    """Lab 8's provider: calls a busy machine sends late still meet the whole spell, then it lets them through."""
    service.set_mode("limited", latency=1, rate=0.0001, burst=1, retry_after=5, eases_after=20)
    # The asking process alone takes longer than the spell to start (0.2 s wall is 20 production seconds).
    first = _ask(service, calls=2, max_retries=0)["outcomes"]
    assert first[0].startswith("answer ") and first[1] == "RateLimitError", first
    assert service.stats()["first_refusal"] is not None
    deadline = time.monotonic() + 10
    while not service.stats()["eased"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _ask(service, calls=2, max_retries=0)["outcomes"][1].startswith("answer ")


def test_a_call_the_client_gave_up_on_is_no_longer_held(service):
    service.set_mode("slow", pattern=["hang"], hang=100_000)
    assert _ask(service, timeout=5, max_retries=0)["outcomes"] == ["APITimeoutError"]
    deadline = time.monotonic() + 5
    while service.stats()["open"] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert service.stats()["open"] == 0


def test_an_unknown_mode_is_refused_and_the_mode_stays(service):
    service.set_mode("healthy", latency=1)
    with pytest.raises(Exception, match="400"):
        service.set_mode("sideways")
    assert service.stats()["mode"] == "healthy"


def test_stopping_the_service_leaves_no_process(tmp_path):
    service = ModelService(tmp_path, SCALE)
    service.start()
    pid = service.proc.pid
    service.stop()
    assert service.proc.poll() is not None
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0


def test_a_bad_time_scale_is_a_one_line_error(tmp_path):
    result = subprocess.run([sys.executable, "-m", "budgetlab.harness.modelserver", "--port-file", str(tmp_path / "p"),
                             "--time-scale", "3"], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
