"""The deployment's start-up check, run by every worker before it takes a message.

Numbers that do not fit together fail silently: nobody notices until
customers do.

Goal: a worker refuses to start (it exits with an error instead of
becoming ready) when any task it would run has a hard time limit, or a
retry delay (the countdown `self.retry()` waits by default), at or above
the number that decides when the broker hands a message out again (the one
settings.py sets), and the message it prints names both numbers, so whoever
deploys knows which one to change.
"""

from celery.signals import worker_init


@worker_init.connect
def refuse_unsafe_budgets(sender=None, **kwargs) -> None:
    """Stop the worker before it starts if a task could still run when its message is handed out again."""
    # TODO: compare every task's hard time limit and retry delay with that broker number.
