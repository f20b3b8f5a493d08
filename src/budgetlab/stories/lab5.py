"""Lab 5's story, shared by `budgetlab run 5` and its checks: a bursty scan load and the counter that measures it.

Kontor re-measured the category table's load correctly, in autocommit:
about 990 scans a second in one window, under 40 five minutes later. The
run replays that load on the seeded table; the checks replay it on a
table of their own. Both read PostgreSQL's counter the one way that
gives true deltas: on a connection in autocommit, used for nothing else.
"""

from __future__ import annotations

from budgetlab import labs

SLUG = labs.slug_of(5)
# Scans per second in the busy window and in the quiet one, as Kontor measured them.
BURST, QUIET = 990, 40
COUNTER = "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = %s"


def sampler_import_error(exc: Exception) -> str:
    """Say in one line that the learner's sampler does not import, and why."""
    return f"{SLUG}/sampler.py does not import: {type(exc).__name__}: {exc}"

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
TRANSCRIPTS = {
    # The number of scans and the rates come from a random load, by design.
    "check-starter": {"masks": ((r"made \d+ scans", "made K scans"), (r"ran [\d, ]+ scans/s", "ran R scans/s"))},
    # Measured rates are never exactly the planned ones; a frozen sampler's 0/s stays visible.
    "run": {"masks": ((r"\b[1-9]\d*/s", "R/s"),)},
}
