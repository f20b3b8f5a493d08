"""Lab 4's story, shared by `budgetlab run 4`, its benchmark and its checks: the category table and the batch process.

The category table is static reference data that Kontor's extractor and
prompt builders re-read for every row. A batch here is a fresh process
running the target's lab-4 code against the rig's database, with real
latencies off (the lab counts scans, not seconds), as both the run and
the checks' in-process probe start it.
"""

from __future__ import annotations

SLUG = "lab4_reference_cache"
TABLE = "books_category"
# The target's lookups the batch times: the table read, one category by code, one for a keyword.
LOOKUPS = ("category_table", "category", "category_for")


def batch_environment(rig, app_name: str) -> dict[str, str]:
    """Return the environment of a batch process with the target's code on the rig's database.

    No latency plan, even one the caller's shell names: the scans are
    the figure, and model latencies would only make the batch slow.
    """
    return rig.environment(extra_env={"KONTOR_APP_NAME": app_name, "KONTOR_LATENCY_PLAN": None}).variables()
