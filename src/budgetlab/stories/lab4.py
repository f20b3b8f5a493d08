"""Lab 4's story, shared by `budgetlab run 4`, its benchmark and its checks: the category table and the batch process.

The category table is static reference data that Kontor's extractor and
prompt builders re-read for every row. A batch here is a fresh process
running the target's lab-4 code against the rig's database, with real
latencies off (the lab counts scans, not seconds), as both the run and
the checks' in-process probe start it.
"""

from __future__ import annotations

from budgetlab import labs
from budgetlab.inworker import clock

SLUG = labs.slug_of(4)
TABLE = "books_category"

# The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on: the one in force.
worker_clock = clock.factor


# The target's lookups the batch times: the table read, one category by code, one for a keyword.
LOOKUPS = ("category_table", "category", "category_for")


def batch_environment(rig, app_name: str) -> dict[str, str]:
    """Return the environment of a batch process with the target's code on the rig's database.

    No latency plan, even one the caller's shell names: the scans are
    the figure, and model latencies would only make the batch slow.
    """
    return rig.environment(extra_env={"KONTOR_APP_NAME": app_name, "KONTOR_LATENCY_PLAN": None}).variables()

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
TRANSCRIPTS = {
    # Which of the worker's processes takes which task is the pool's choice: the split varies, the total does not.
    "check-starter": {"masks": ((r"shows \d+ of its", "shows B of its"),
                                (r"\d+ times in one process", "M times in one process"))},
    "run": {"masks": (
        (r"\b\d+\.\d+ (s|ms)\b", r"T \1"),
        (r"\d+% of", "P% of"),
        (r"took \d+ ms", "took T ms"),
    )},
    # One round keeps the suite's re-run short; the page says how to ask for medians. The benchmark's
    # times and the machine they ran on vary; its scan and query counts do not.
    "benchmark": {"command": (".venv/bin/python", "benchmarks/lab4_cache.py", "--rounds", "1"), "timeout": 600.0,
                  "masks": (
        (r"python [\d.]+ on \d+ CPUs?, load average [\d.]+", "python V on N CPUs, load average L"),
        (r"\b\d[\d,]*\.\d+ (s|ms)\b", r"T \1"),
        (r"(T (?:s|ms) +T (?:s|ms) +)[\d,]+x", r"\1Rx"),
    )},
}
