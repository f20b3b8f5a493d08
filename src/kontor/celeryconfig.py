"""Kontor's base Celery settings; lab 1's settings module builds on these."""

import os


# No default: a guessed redis://localhost could be somebody else's Redis. A process that
# only imports tasks may leave it unset; a worker refuses to start without it (celery_app).
broker_url = os.environ.get("KONTOR_BROKER_URL")
result_backend = os.environ.get("KONTOR_RESULT_BACKEND", broker_url)
# JSON only: the workshop's messages must be readable by a person inspecting Redis.
task_serializer = "json"
result_serializer = "json"
accept_content = ["json"]
# Results carry the task's name, args and worker, so a result read back names what ran where.
result_extended = True
# Celery's default, written out: prefork is the pool that applies both time limits.
worker_pool = "prefork"
# One message at a time per child: long model-calling tasks must not sit reserved behind
# a busy child while another one idles.
worker_prefetch_multiplier = 1
# Celery's default, written out: a message is acknowledged just before its task runs, so
# nothing the task does, a hard limit that kills its child included, brings it back.
task_acks_late = False
# Keep Celery 5's start-up behaviour (retry the broker connection) and silence its
# deprecation warning about the setting's future default.
broker_connection_retry_on_startup = True
# Celery's default, written out: the worker owns the root logger, so task log lines
# reach the worker log that `budgetlab run` and the graders read.
worker_hijack_root_logger = True
