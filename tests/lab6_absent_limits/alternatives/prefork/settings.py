"""Celery settings of the agent worker: Kontor's base settings, and the pool this queue runs on.

Model calls are I/O waits: a thread blocked on the provider costs almost
nothing, so the agent queue moved from prefork children to twenty threads
in one process. Cheaper, and `celery inspect stats` still lists the tasks'
soft and hard limits, so every task looks budgeted.

Goal: see the module docstrings of assistant.py and review.py. This file
decides which pool runs them, and so which limits anything enforces.
"""

from kontor.celeryconfig import *  # noqa: F401,F403 - Kontor's broker, serializers and defaults

# Back on Kontor's prefork pool: the only pool where Celery applies the soft limit the
# tasks declare. Twenty children, so twenty people can still ask at once; they cost
# memory the threads did not, and that is the price of a limit that holds.
worker_concurrency = 20
