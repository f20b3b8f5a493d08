"""Django settings of the room board alone: its own SQLite file, no Kontor, no PostgreSQL.

Only `budgetlab facilitate` loads this module (budgetlab.board.server sets
DJANGO_SETTINGS_MODULE in its own process); workers, graders and lab code
use kontor.settings and never see it.
"""

from __future__ import annotations

import os
import secrets

# Nothing is signed (no sessions, no cookies); a fresh key per run costs nothing.
SECRET_KEY = secrets.token_urlsafe(32)
DEBUG = False
# server.py narrows this to the loopback names unless the room is served on the LAN.
ALLOWED_HOSTS = os.environ.get("BUDGETLAB_BOARD_HOSTS", "127.0.0.1,localhost").split(",")
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "budgetlab.board.urls"
INSTALLED_APPS = ["budgetlab.board"]
MIDDLEWARE = ["django.middleware.security.SecurityMiddleware"]
SECURE_CONTENT_TYPE_NOSNIFF = True
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True, "OPTIONS": {}}]
# The board reads at most this much of a request body (payload.MAX_BODY_BYTES is the result's own limit).
DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("BUDGETLAB_BOARD_DB", ":memory:"),
        "OPTIONS": {
            # Each request thread has its own connection; writes are also serialised in services.py,
            # so the timeout only covers a reader meeting a checkpoint.
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            # WAL: the page's reads never wait for a learner's write.
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"null": {"class": "logging.NullHandler"}},
    # One line per request would bury the join command the facilitator has to read out.
    "loggers": {"django.server": {"handlers": ["null"], "propagate": False}},
}

#: The join URL the page shows; server.py sets it once the room is open, with the address the room can reach.
BOARD_JOIN_URL = ""
#: Minutes a learner may fail the same check before the board flags them; the page can change it.
#: 15: about half of a lab's timebox (25 to 40 min), late enough that a first failing check is no alarm.
BOARD_STUCK_MINUTES = float(os.environ.get("BUDGETLAB_BOARD_STUCK_MINUTES", "15"))
