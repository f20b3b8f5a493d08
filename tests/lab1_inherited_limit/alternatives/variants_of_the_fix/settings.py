"""Kontor's Celery settings: every master that entrypoint.sh starts reads this module."""

from os import environ

from kontor.celeryconfig import *  # noqa: F403


def _seconds(variable: str, default: float) -> float:
    """Read a budget in seconds from the environment, or fall back to the default chosen here."""
    return float(environ.get(variable) or default)


task_soft_time_limit = _seconds("KONTOR_TASK_SOFT_TIME_LIMIT", 600)  # ten minutes: a 40-file upload fits
task_time_limit = _seconds(  # five minutes after the soft limit for a task to wind down
    "KONTOR_TASK_TIME_LIMIT", 900)

task_routes = {
    "imports.*": {"queue": "imports"},
    "documents.*": {"queue": "documents"},
    "sweeps.*": {"queue": "sweeps"},
    "agents.batch.*": {"queue": "agent-batch"},
    "agents.interactive.*": {"queue": "agent-interactive"},
}
