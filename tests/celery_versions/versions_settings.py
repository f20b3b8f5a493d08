"""Celery settings for the version tests: Kontor's base settings with a budget read from the environment."""

import os

from kontor.celeryconfig import *  # noqa: F403

# Test input, not a budget: each test says which numbers the settings hold.
task_soft_time_limit = int(os.environ.get("VERSIONS_SOFT_TIME_LIMIT", "600"))
task_time_limit = int(os.environ.get("VERSIONS_TIME_LIMIT", "900"))
