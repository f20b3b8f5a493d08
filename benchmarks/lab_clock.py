"""Benchmark: how precisely the lab-clock pool fires soft and hard limits against the scaled budget.

Target: within 20 ms of wall time. Starts one real prefork worker on the
stack, runs tasks that outlive their limits, and prints the error of each
limit in wall milliseconds. Needs a running stack (`budgetlab stack up`).
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from pathlib import Path

from budgetlab import stack
from budgetlab.harness.rig import Rig
from budgetlab.inworker import clock

PROBE = Path(__file__).resolve().parents[1] / "tests" / "foundation" / "probe"
ROUNDS = 10


def main() -> int:
    stack.require()
    soft_errors, hard_errors = [], []
    with Rig(PROBE, label="bench") as rig:
        queue = rig.queue()
        rig.start_worker([queue], ["clock_probe"])
        for _ in range(ROUNDS):
            soft = rig.client.send_task("probe.linger", args=[5000, False], queue=queue).get(timeout=30)
            soft_errors.append((soft["soft_at_wall"] - clock.to_wall(600)) * 1000)
            report = rig.folder() / f"hard-{uuid.uuid4().hex}"
            rig.client.send_task("probe.linger", args=[5000, True, str(report)], queue=queue).get(
                timeout=30, propagate=False)
            deadline = time.monotonic() + 5
            while not (report.exists() and report.read_text()) and time.monotonic() < deadline:
                time.sleep(0.01)  # the child writes it between SIGTERM and SIGKILL
            hard_errors.append((float(report.read_text()) - clock.to_wall(900)) * 1000)
    print(clock.describe())
    for name, errors in (("soft limit (inside the task)", soft_errors), ("hard limit (SIGTERM in the task)", hard_errors)):
        print(f"{name:32} error ms: median {statistics.median(errors):6.1f}  max {max(errors):6.1f}  "
              f"min {min(errors):6.1f}   target within 20 ms   ({ROUNDS} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
