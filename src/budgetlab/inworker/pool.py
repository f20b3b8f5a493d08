"""The lab-clock prefork pool: real prefork, with time limits scaled to the lab clock.

Selected through the Celery app's `worker_pool` setting. Everything a
person or Celery reports stays in production seconds: the pool defaults
shown by `inspect().stats()`, the soft and hard limits in the worker's log
lines and the `TimeLimitExceeded` a caller sees. Only the timers that the
pool arms run on wall time scaled by BUDGETLAB_CLOCK: the time limits, and
the supervisor's look for exited children. Nothing else about prefork
changes: SIGUSR1 at the soft limit, SIGTERM then SIGKILL at the hard one.
"""

from __future__ import annotations

from celery.concurrency import prefork
from celery.concurrency.asynpool import AsynPool
from celery.exceptions import TimeLimitExceeded

from budgetlab.inworker import clock

# Celery's supervisor looks for exited children every 5 s. It is also told the moment a
# child's pipe closes, but it may look before the kernel has made the child a zombie, and
# then only the timer finds it: after a hard kill, the next task could wait up to 5 wall
# seconds, which the lab clock would make 1,000 production seconds or more.
SUPERVISE_EVERY = 5.0
# Never faster than this (wall seconds): each look is one waitpid per child, but it wakes the event loop.
SUPERVISE_FASTEST = 0.05


class _LabClockAsynPool(AsynPool):
    """Celery's prefork pool whose periodic look for exited children runs on the lab clock."""

    @property
    def timers(self):
        return {self.maintain_pool: max(clock.to_wall(SUPERVISE_EVERY), SUPERVISE_FASTEST)}


class TaskPool(prefork.TaskPool):
    """Prefork pool whose soft and hard timeouts, and supervisor, run on the lab clock."""

    Pool = _LabClockAsynPool

    def __init__(self, *args, soft_timeout=None, timeout=None, **options):
        # Pool-wide defaults come from the worker flags or the settings, in production seconds.
        self.production_timeouts = (soft_timeout, timeout)
        super().__init__(*args, soft_timeout=clock.to_wall(soft_timeout) or None,
                         timeout=clock.to_wall(timeout) or None, **options)

    def apply_async(self, target, args=None, kwargs=None, **options):
        for key in ("soft_timeout", "timeout"):
            if options.get(key):
                options[key] = clock.to_wall(options[key])
        if options.get("timeout_callback") is not None:
            options["timeout_callback"] = _timeout_in_production_seconds(options["timeout_callback"])
        if options.get("error_callback") is not None:
            options["error_callback"] = _failure_in_production_seconds(options["error_callback"])
        return super().apply_async(target, args, kwargs, **options)

    def _get_info(self):
        info = super()._get_info()
        soft, hard = self.production_timeouts
        info["timeouts"] = (soft or 0, hard or 0)
        info["lab-clock"] = clock.factor()
        return info


def _production(wall_seconds):
    seconds = clock.to_production(wall_seconds)
    return round(seconds, 3) if seconds is not None else None


def _timeout_in_production_seconds(callback):
    """Wrap Request.on_timeout so its log lines and TimeLimitExceeded show production seconds."""
    def on_timeout(soft, timeout):
        return callback(soft, _production(timeout))
    return on_timeout


def _failure_in_production_seconds(callback):
    """Wrap Request.on_failure: the pool reports a hard kill as TimeLimitExceeded(wall seconds)."""
    def on_failure(exc_info, *args, **kwargs):
        exc = getattr(exc_info, "exception", None)
        exc = getattr(exc, "exc", exc)  # billiard may wrap it in ExceptionWithTraceback
        if isinstance(exc, TimeLimitExceeded) and exc.args:
            exc.args = (_production(exc.args[0]),)
        return callback(exc_info, *args, **kwargs)
    return on_failure
