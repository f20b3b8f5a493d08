"""Kontor's Celery app: settings from a module, tasks from the modules a worker is told to load.

KONTOR_CELERY_SETTINGS names the settings module (lab 1 points it at the
learner's), KONTOR_TASK_MODULES the comma-separated task modules, and
KONTOR_DEFAULT_QUEUE, when set, the queue a task sent without one goes to.
"""

import os

import django
from celery import Celery, bootsteps

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
django.setup()

app = Celery("kontor")
app.config_from_object(os.environ.get("KONTOR_CELERY_SETTINGS", "kontor.celeryconfig"))
_modules = [m.strip() for m in os.environ.get("KONTOR_TASK_MODULES", "").split(",") if m.strip()]
app.conf.include = [*app.conf.include, *_modules]
# The queue this deployment's workers consume; a task sent without naming a queue goes there.
if os.environ.get("KONTOR_DEFAULT_QUEUE"):
    app.conf.task_default_queue = os.environ["KONTOR_DEFAULT_QUEUE"]



class RequireBroker(bootsteps.Step):
    """Refuse to start a worker that names no broker, rather than fall back to Celery's localhost default."""

    def __init__(self, worker, **kwargs) -> None:
        if not worker.app.conf.broker_url:
            raise SystemExit("KONTOR_BROKER_URL is not set; name Kontor's Redis, e.g. redis://127.0.0.1:6379/5")
        super().__init__(worker, **kwargs)


app.steps["worker"].add(RequireBroker)
