"""The embedded servers' random passwords, kept in one 0600 file under .budgetlab/ and never printed.

On a machine shared by several people (a training server with an account
per learner), a server on loopback is reachable by every local user; a
password only the checkout's owner can read keeps each stack its owner's.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

from budgetlab.paths import state_dir

# The two servers, and the role lab code connects as on the embedded PostgreSQL.
KINDS = ("postgres", "redis", "lab-role")


def secrets_file() -> Path:
    return state_dir() / "secrets.json"


def password(kind: str) -> str:
    """Return a password of the stack's, creating the file (readable by its owner only) or the entry on first use."""
    path = secrets_file()
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if kind in known:
        return known[kind]
    # Only the missing ones are chosen: a server already started keeps the password it has.
    chosen = {**{name: secrets.token_urlsafe(24) for name in KINDS}, **known}
    fd = os.open(path.with_suffix(".tmp"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(chosen, out)
    os.replace(path.with_suffix(".tmp"), path)
    return chosen[kind]


def address(url: str) -> str:
    """Return a server URL's host:port, the part that may be shown without credentials."""
    return urlsplit(url).netloc.rpartition("@")[2]


def with_password(url: str, secret: str, user: str = "") -> str:
    """Return the URL with the password (and user) in it, for clients."""
    parts = urlsplit(url)
    host = address(url)
    name = user or parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{quote(name)}:{quote(secret, safe='')}@{host}"))


def without_password(url: str) -> str:
    """Return the URL as it may be shown: the user stays, the password goes."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = address(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=user + host))
