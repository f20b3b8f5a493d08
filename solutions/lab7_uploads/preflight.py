"""The deployment's start-up check, run by every worker before it takes a message.

Numbers that do not fit together fail silently: nobody notices until
customers do.

Goal: a worker refuses to start (it exits with an error instead of
becoming ready) when any task it would run has a hard time limit, or a
retry delay (the countdown `self.retry()` waits by default), at or above
the broker's visibility timeout, and the message it prints names both
numbers, so whoever deploys knows which one to change.
"""

from celery.signals import worker_init

# Kombu's Redis transport redelivers after an hour when the settings name no timeout.
DEFAULT_VISIBILITY_TIMEOUT = 3600


@worker_init.connect
def refuse_unsafe_budgets(sender=None, **kwargs) -> None:
    """Stop the worker before it starts if a task, or its retry, could outlive the broker's visibility timeout."""
    app = sender.app
    visibility = app.conf.broker_transport_options.get("visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT)
    for name, task in sorted(app.tasks.items()):
        if name.startswith("celery."):
            continue  # Celery's own housekeeping tasks
        # The task's own limit wins, then the worker's --time-limit flag, then the settings.
        limit = task.time_limit or sender.time_limit or app.conf.task_time_limit
        if limit is None or limit >= visibility:
            budget = "no hard time limit" if limit is None else f"a hard time limit of {limit:.0f} s"
            refuse(name, budget, visibility)
        # A retry is a new message with a countdown: a worker holds it unacknowledged until it is due.
        if task.default_retry_delay is not None and task.default_retry_delay >= visibility:
            refuse(name, f"a retry delay of {task.default_retry_delay:.0f} s", visibility)


def refuse(name: str, what: str, visibility: float) -> None:
    """Stop the worker with a message that names the task's number and the timeout."""
    # SystemExit, not an Exception: Celery logs and ignores what a signal handler raises.
    raise SystemExit(f"refusing to start: {name} has {what}, but the broker delivers an "
                     f"unacknowledged message again after visibility_timeout={visibility:.0f} s")
