"""Django settings for Kontor: PostgreSQL only, everything else kept minimal."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

SECRET_KEY = "kontor-workshop-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "Europe/Berlin"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "kontor.books",
]


def _database_url() -> str:
    url = os.environ.get("KONTOR_DATABASE_URL")
    if not url:
        # No default: a guessed local database could be somebody else's.
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured("KONTOR_DATABASE_URL is not set; name Kontor's PostgreSQL database, "
                                   "e.g. postgresql://kontor@127.0.0.1:5432/kontor")
    return url


def _database(url: str) -> dict:
    parts = urlsplit(url)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": parts.path.lstrip("/"),
        "USER": parts.username or "",
        "PASSWORD": parts.password or "",
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
        # No server settings in OPTIONS: the labs measure PostgreSQL as its server is configured.
        "OPTIONS": {"application_name": os.environ.get("KONTOR_APP_NAME", "kontor")},
        "TEST": {"NAME": None},
    }


DATABASES = {"default": _database(_database_url())}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {"kontor": {"handlers": ["console"], "level": "INFO", "propagate": True}},
}
