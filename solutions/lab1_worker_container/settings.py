"""Kontor's Celery settings: every master that entrypoint.sh starts reads this module.

Code review trusts this file: a task that sets no limits of its own, it
says, gets ten minutes before SoftTimeLimitExceeded and fifteen before
its worker child is killed. This week a 40-file bulk OCR job and the
invoice reminder sweep were both stopped after 120 s. Read entrypoint.sh
for the goal.
"""

import os

from kontor.celeryconfig import *  # noqa: F403  (broker, JSON only, the prefork pool)

# The fix: these are now the limits a task without its own really gets,
# because no worker flag on the transactional queues overrides them. A
# deployment changes them through the environment, and a task's decorator
# still wins over both.

# Ten minutes: a 40-file bulk upload needs five to six with typical model
# latencies, one customer's reminder sweep about six and a half. The 95-file
# upload the product allows is a bet on the latency tail even here (see
# budget.ipynb), which is why the end of a budget must be handled too.
task_soft_time_limit = int(os.environ.get("KONTOR_TASK_SOFT_TIME_LIMIT", "600"))
# Five more minutes after the soft limit for a task to record how far it
# got and leave; only then is its worker child killed.
task_time_limit = int(os.environ.get("KONTOR_TASK_TIME_LIMIT", "900"))

# Each task goes to the queue that its name starts with.
task_routes = {
    "imports.*": {"queue": "imports"},
    "documents.*": {"queue": "documents"},
    "sweeps.*": {"queue": "sweeps"},
    "agents.batch.*": {"queue": "agent-batch"},
    "agents.interactive.*": {"queue": "agent-interactive"},
}

# Task-level budgets for the agent tasks that declare none in their decorator.
# On Celery 5.7 the producer's settings travel in each message's timelimit
# header and beat the agent masters' flags, so a budget per queue only holds
# when it is attached to the task itself. Annotations are task-level, so
# both 5.6 and 5.7 apply them however the task is sent.
task_annotations = {
    # Batch agent: up to 95 documents with a model call each, 30 minutes soft.
    "agents.batch.run_agent": {"soft_time_limit": 1800, "time_limit": 2100},
    # Interactive agent: a person waits; 45 s soft, then 15 s to answer "try again".
    "agents.interactive.answer_question": {"soft_time_limit": 45, "time_limit": 60},
}
