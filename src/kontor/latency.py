"""Latency models for the stand-ins of the language model and the OCR call.

The model-call figures come from a month of production agent steps: median
about 5.5 s, p99 about 35 s, slowest just under 11 minutes. A lognormal
fitted to the median and the p99 gives the body:

    mu    = ln(5.5)                       = 1.7047
    sigma = (ln(35) - ln(5.5)) / z(0.99)  = (3.5553 - 1.7047) / 2.3263 = 0.7955

A lognormal alone almost never produces an 11-minute call (that is 6
sigma out), yet production had one in about 100,000. So one call in
100,000 is a "stuck" call, uniform between 2 and 11 minutes. It leaves the
median and p99 unchanged and makes the cap reachable. Every sample is
capped at 659 s, just under 11 minutes.

The OCR stand-in is a deterministic tool call: a lognormal with median
30 ms and p99 90 ms.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

Z_99 = 2.326348  # the standard normal's 99th percentile


@dataclass(frozen=True)
class LatencyModel:
    """A capped lognormal with a rare uniform tail, in production seconds."""

    median: float
    p99: float
    cap: float
    stuck_probability: float = 0.0
    stuck_low: float = 0.0

    @property
    def mu(self) -> float:
        return math.log(self.median)

    @property
    def sigma(self) -> float:
        return (math.log(self.p99) - math.log(self.median)) / Z_99

    def sample(self, rng: random.Random) -> float:
        """Draw one latency in production seconds."""
        if self.stuck_probability and rng.random() < self.stuck_probability:
            return rng.uniform(self.stuck_low, self.cap)
        return min(rng.lognormvariate(self.mu, self.sigma), self.cap)


MODEL_CALL = LatencyModel(median=5.5, p99=35.0, cap=659.0, stuck_probability=1e-5, stuck_low=120.0)
OCR_CALL = LatencyModel(median=0.030, p99=0.090, cap=1.0)


def keyed_rng(seed: int, key: str) -> random.Random:
    """Return a generator that depends only on the seed and the item's key, not on call order."""
    return random.Random(f"{seed}:{key}")
