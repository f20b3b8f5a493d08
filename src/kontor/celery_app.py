"""Kontor's Celery app: settings from a module, tasks from the modules a worker is told to load.

KONTOR_CELERY_SETTINGS names the settings module (lab 1 points it at the
learner's), KONTOR_TASK_MODULES the comma-separated task modules.
"""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
django.setup()

from kontor.broker import KontorCelery  # noqa: E402  (after Django is set up)

app = KontorCelery("kontor")
app.config_from_object(os.environ.get("KONTOR_CELERY_SETTINGS", "kontor.celeryconfig"))
_modules = [m.strip() for m in os.environ.get("KONTOR_TASK_MODULES", "").split(",") if m.strip()]
app.conf.include = [*app.conf.include, *_modules]
