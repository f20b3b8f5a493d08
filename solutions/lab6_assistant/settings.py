"""Celery settings of the agent worker: Kontor's base settings, and the pool this queue runs on.

Model calls are I/O waits: a thread blocked on the provider costs almost
nothing, so the agent queue moved from prefork children to twenty threads
in one process. Cheaper, and `celery inspect registered soft_time_limit
time_limit` still shows the tasks' soft and hard limits, so every task
looks budgeted.

Goal: see the module docstrings of assistant.py and review.py. This file
decides which pool runs them.
"""

from kontor.celeryconfig import *  # noqa: F401,F403 - Kontor's broker, serializers and defaults

# Twenty people may ask the assistant at once; a thread each is far cheaper than
# twenty prefork children, and a thread waiting on the model uses no CPU.
# The threads pool applies none of the tasks' time limits: the tasks keep their own
# deadlines and the client its own timeouts (model_calls.py), so this is a choice.
worker_pool = "threads"  # noqa: BL006 - budgets enforced in model_calls.py, not by the pool
worker_concurrency = 20
