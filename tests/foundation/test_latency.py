"""The latency stand-ins match their documented production figures."""

import random
import statistics

from kontor.latency import MODEL_CALL, OCR_CALL, keyed_rng


def _quantile(samples: list[float], q: float) -> float:
    return sorted(samples)[int(q * (len(samples) - 1))]


def test_model_latency_matches_production_quantiles():
    """On 200,000 calls: median about 5.5 s, p99 about 35 s, nothing above 659 s."""
    rng = random.Random(1)
    samples = [MODEL_CALL.sample(rng) for _ in range(200_000)]
    assert abs(statistics.median(samples) - 5.5) / 5.5 < 0.02
    assert abs(_quantile(samples, 0.99) - 35.0) / 35.0 < 0.05
    assert max(samples) <= 659.0


def test_stuck_calls_reach_the_eleven_minute_tail():
    """About one call in 100,000 is stuck for minutes, as in production; the lognormal alone never gets there."""
    rng = random.Random(2)
    stuck = sum(MODEL_CALL.sample(rng) >= 300 for _ in range(1_000_000))
    # Expected: 10 stuck calls per million, two thirds of them above 300 s; the body adds 0.25.
    assert 2 <= stuck <= 16, f"{stuck} calls over 5 minutes in a million"


def test_ocr_latency_is_tens_of_milliseconds():
    """The OCR stand-in's median is about 30 ms."""
    rng = random.Random(3)
    samples = [OCR_CALL.sample(rng) for _ in range(50_000)]
    assert 0.028 < statistics.median(samples) < 0.032


def test_latency_depends_only_on_seed_and_key():
    """The same item gets the same latency whatever the call order."""
    first = [MODEL_CALL.sample(keyed_rng(7, f"row-{i}")) for i in range(50)]
    second = [MODEL_CALL.sample(keyed_rng(7, f"row-{i}")) for i in reversed(range(50))][::-1]
    assert first == second
    assert first != [MODEL_CALL.sample(keyed_rng(8, f"row-{i}")) for i in range(50)]
