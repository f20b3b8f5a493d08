"""Benchmark: how precisely the lab clock keeps production time in a real worker, and what it costs an idle one.

Targets: limits within 20 ms of wall time of their scaled budget; every
way of waiting within 20 ms; an idle worker (master and two children)
under 5 % of one core at the default clock and at lab 7's. Starts real
prefork workers on the stack (Celery's own pool, on the lab clock) and
prints the figures. Needs a running stack (`budgetlab stack up`).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

from budgetlab import stack
from budgetlab.harness.rig import Rig
from budgetlab.inworker import clock

PROBE = Path(__file__).resolve().parents[1] / "tests" / "foundation" / "probe"
ROUNDS = 10
WAIT = 40.0  # production seconds each way of waiting waits
IDLE = 3.0  # wall seconds an idle worker is watched


def cpu_seconds(pids: set[int]) -> float:
    """Return the CPU seconds (user + system) the processes have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


def limits(rig: Rig, queue: str) -> None:
    soft_errors = []
    for _ in range(ROUNDS):
        soft = rig.client.send_task("probe.linger", args=[5000, False], queue=queue).get(timeout=30)
        soft_errors.append((soft["soft_at_wall"] - clock.to_wall(600)) * 1000)
    print(f"{'soft limit (inside the task)':34} error ms: median {statistics.median(soft_errors):6.1f}  "
          f"max {max(soft_errors):6.1f}  min {min(soft_errors):6.1f}   target within 20 ms   ({ROUNDS} rounds)")


def waits(rig: Rig, queue: str) -> None:
    measured = rig.client.send_task("probe.waits", args=[WAIT], queue=queue).get(timeout=60)
    for name, (production, wall) in measured.items():
        print(f"{name:34} {production:7.2f} production s   error {(wall - clock.to_wall(WAIT)) * 1000:6.1f} ms wall")


def idle(factor: float) -> float:
    """Return the share of one core an idle worker with two children uses on a clock of `factor`."""
    with Rig(PROBE, label="bench") as rig:
        queue = rig.queue()
        tree = rig.start_worker([queue], ["clock_probe"], concurrency=2, extra_env={"BUDGETLAB_CLOCK": repr(factor)})
        time.sleep(1.0)  # past start-up
        pids = tree.pids()
        before, started = cpu_seconds(pids), time.monotonic()
        time.sleep(IDLE)
        return (cpu_seconds(pids) - before) / (time.monotonic() - started)


def main() -> int:
    stack.require()
    print(clock.describe())
    with Rig(PROBE, label="bench") as rig:
        queue = rig.queue()
        rig.start_worker([queue], ["clock_probe"])
        limits(rig, queue)
        waits(rig, queue)
    for factor in (clock.DEFAULT_FACTOR, 0.0002):
        print(f"idle worker, 2 children, clock {factor:g} ({1 / factor:g}x): "
              f"{idle(factor) * 100:5.1f} % of one core   target under 5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
