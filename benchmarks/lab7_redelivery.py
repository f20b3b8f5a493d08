"""How long a redelivery really takes on kombu's Redis transport, under lab 7's clock: prints the figures.

Usage: python benchmarks/lab7_redelivery.py [TRIALS]   (the stack must be up; default 5 trials)

Each trial sends one long upload to two workers running the starter's code
(acks_late, visibility timeout unset, so kombu's 3600 s). The first worker
receives it; the time until the second worker receives the same task id
is the redelivery delay: the visibility timeout plus the lag of kombu's
restore sweep (a timer of the worker's event loop) plus the idle worker's
next BRPOP. Figures are in production seconds and in wall seconds.
"""

from __future__ import annotations

import statistics
import sys
import time

from budgetlab.stories import lab7

# kombu's Redis transport defaults, in production seconds (kombu 5.7.0, kombu/transport/redis.py:1063-1070).
VISIBILITY_TIMEOUT = 3600
RESTORE_INTERVAL = 10


def trial(day: lab7.Day, factor: float) -> float | None:
    """Return the wall seconds between the first and the second delivery of one upload, or None."""
    upload = lab7.create_upload(95)
    task_id = day.send(upload.pk)
    if not lab7.wait_for(lambda: lab7.deliveries(day.logs(), task_id) >= 1, 10):
        return None
    first = time.monotonic()
    if not lab7.wait_for(lambda: lab7.deliveries(day.logs(), task_id) >= 2, lab7.run_wait()):
        return None
    delay = time.monotonic() - first
    day.settle(task_id, 3 * lab7.run_wait())
    return delay


def main(trials: int) -> None:
    with lab7.lab_clock() as factor:
        measure(trials, factor)


def measure(trials: int, factor: float) -> None:
    from budgetlab.harness.rig import Rig
    from budgetlab.inworker import clock
    from budgetlab.paths import labs_root

    print(f"{clock.describe()}")
    print(f"kombu's defaults, unchanged on the lab clock: visibility_timeout={VISIBILITY_TIMEOUT} s, a restore "
          f"tick every {RESTORE_INTERVAL} s, a Redis scan every 10th tick: a redelivery lands up to ~100 s late")
    delays = []
    with Rig(labs_root() / "labs", label="bench7") as rig, rig.django():
        day = lab7.Day(rig, 60.0)
        for number in range(1, trials + 1):
            delay = trial(day, factor)
            if delay is None:
                print(f"trial {number}: no second delivery")
                continue
            delays.append(delay)
            print(f"trial {number}: second delivery after {delay:.3f} s wall = {delay / factor:,.0f} s production "
                  f"(timeout {VISIBILITY_TIMEOUT} s, lag {delay / factor - VISIBILITY_TIMEOUT:,.0f} s)")
    if delays:
        lag = [d / factor - VISIBILITY_TIMEOUT for d in delays]
        print(f"redelivery lag after the timeout, production s: min {min(lag):,.0f}  median "
              f"{statistics.median(lag):,.0f}  max {max(lag):,.0f}  ({len(delays)} of {trials} trials)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
