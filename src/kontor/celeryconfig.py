"""Kontor's base Celery settings; lab 1's settings module builds on these."""

import os


def _broker_url() -> str:
    explicit = os.environ.get("KONTOR_BROKER_URL")
    if explicit:
        return explicit
    from budgetlab import stack

    return stack.redis_url(0)


broker_url = _broker_url()
result_backend = os.environ.get("KONTOR_RESULT_BACKEND", broker_url)
# JSON only: the workshop's messages must be readable by a person inspecting Redis.
task_serializer = "json"
result_serializer = "json"
accept_content = ["json"]
result_extended = True
# The lab clock lives here, not in learner code: prefork with scaled time limits.
worker_pool = "budgetlab.pool:TaskPool"
worker_prefetch_multiplier = 1
task_acks_late = False
broker_connection_retry_on_startup = True
worker_hijack_root_logger = True
