"""Benchmark: cold set-up of the embedded stack (initdb, start, migrate, seed) and warm `stack up`.

Targets: warm `budgetlab stack up` 3 s or less; cold set-up without pip 20 s or less.
Runs on a private stack under a temporary root and takes it down again.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time


def budgetlab(root: str, *args: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["BUDGETLAB_ROOT"] = root
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-stack-") as root:
        try:
            cold = budgetlab(root, "stack", "up")
            running = [budgetlab(root, "stack", "up") for _ in range(3)]
            warm = []
            for _ in range(3):
                budgetlab(root, "stack", "down")
                warm.append(budgetlab(root, "stack", "up"))
        finally:
            # Also what the private root needed under /tmp, being out of the server's reach.
            budgetlab(root, "stack", "down", "--remove-copies")
    print(f"cold set-up (initdb + start + migrate + seed): {cold:6.2f} s   target <= 20 s")
    print(f"warm stack up (servers stopped, data kept):    {statistics.median(warm):6.2f} s   target <= 3 s"
          f"   (median of {len(warm)}: {', '.join(f'{w:.2f}' for w in warm)})")
    print(f"stack up while already running:               {statistics.median(running):6.2f} s")


if __name__ == "__main__":
    main()
