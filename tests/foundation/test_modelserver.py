"""The model service speaks enough of OpenAI's API for the official client, on the lab clock, in both modes."""

from __future__ import annotations

import subprocess
import sys
import time

import openai
import pytest

from budgetlab.harness.modelserver import ModelService

SCALE = 0.01  # 100x: a 30 s production timeout is 0.3 wall seconds


@pytest.fixture
def service(tmp_path, monkeypatch):
    with ModelService(tmp_path, SCALE) as started:
        monkeypatch.setenv("KONTOR_MODEL_BASE_URL", started.base_url)
        monkeypatch.setenv("KONTOR_TIME_SCALE", str(SCALE))
        yield started


def _ask(client, content: str = "Which category fits a train ticket?"):
    return client.chat.completions.create(model="kontor-assistant-1", messages=[{"role": "user", "content": content}])


def _production(started: float) -> float:
    return (time.monotonic() - started) / SCALE


def test_a_healthy_call_answers_through_the_official_client_after_its_latency(service):
    from kontor.llm import model_client

    service.set_mode("healthy", latency=20)
    started = time.monotonic()
    answer = _ask(model_client())
    assert answer.choices[0].message.content.startswith("answer ")
    assert _production(started) >= 20


def test_the_same_prompt_gets_the_same_answer(service):
    from kontor.llm import model_client

    service.set_mode("healthy", latency=1)
    client = model_client()
    assert _ask(client, "same").choices[0].message.content == _ask(client, "same").choices[0].message.content


def test_a_hung_call_ends_at_the_clients_timeout_in_production_seconds(service):
    from kontor.llm import model_client

    service.set_mode("slow", pattern=["hang"])
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        _ask(model_client(timeout=30, max_retries=0))
    assert 30 <= _production(started) < 30 + 15


def test_a_slow_body_trips_the_read_timeout_too(service):
    from kontor.llm import model_client

    service.set_mode("slow", pattern=["slow_body"])
    with pytest.raises(openai.APITimeoutError):
        _ask(model_client(timeout=10, max_retries=0))


def test_the_clients_default_retries_try_a_hung_call_three_times(service):
    from kontor.llm import model_client

    service.set_mode("slow", pattern=["hang"])
    with pytest.raises(openai.APITimeoutError):
        _ask(model_client(timeout=10))
    assert service.stats()["served"]["hang"] == 3


def test_rate_limits_and_server_errors_reach_the_client_as_their_openai_errors(service):
    from kontor.llm import model_client

    service.set_mode("slow", pattern=["rate_limit", "server_error"], retry_after=5)
    client = model_client(max_retries=0)
    with pytest.raises(openai.RateLimitError):
        _ask(client)
    with pytest.raises(openai.InternalServerError):
        _ask(client)


def test_a_call_the_client_gave_up_on_is_no_longer_held(service):
    from kontor.llm import model_client

    service.set_mode("slow", pattern=["hang"], hang=100_000)
    with pytest.raises(openai.APITimeoutError):
        _ask(model_client(timeout=5, max_retries=0))
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
