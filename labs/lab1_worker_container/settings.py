"""Kontor's Celery settings: every master that entrypoint.sh starts reads this module.

Code review trusts this file: a task that sets no limits of its own, it
says, gets ten minutes before SoftTimeLimitExceeded and fifteen before
its worker child is killed. This week a 40-file bulk OCR job and the
invoice reminder sweep were both stopped after 120 s. Read entrypoint.sh
for the goal.
"""

from kontor.celeryconfig import *  # noqa: F403  (broker, JSON only, the prefork pool)

# TODO: make these the limits that a task without its own really gets.
task_soft_time_limit = 600
task_time_limit = 900

# Each task goes to the queue that its name starts with.
task_routes = {
    "imports.*": {"queue": "imports"},
    "documents.*": {"queue": "documents"},
    "sweeps.*": {"queue": "sweeps"},
    "agents.batch.*": {"queue": "agent-batch"},
    "agents.interactive.*": {"queue": "agent-interactive"},
}
