"""Finds the files to audit under the given paths and tells Python files from launch files."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

# Directory names skipped while walking below a given path. A path given on
# the command line is always audited, even when it is one of these: the speed
# benchmark audits Django and Celery inside site-packages on purpose.
SKIPPED_DIRS = frozenset(
    {
        ".venv",
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        "site-packages",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)

SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh")
YAML_SUFFIXES = (".yml", ".yaml")
# Unit files and supervisor/ini style files start workers with `Key=value` lines.
KEYVALUE_SUFFIXES = (".service", ".conf", ".ini")


def launch_kind(path: Path) -> str | None:
    """Kind of launch file by name: "shell", "yaml", "keyvalue", or None.

    Dockerfiles and Procfiles are read as shell lines: their instructions and
    process lines are command lines with a word in front.
    """
    name = path.name
    lower = name.lower()
    if lower.endswith(SHELL_SUFFIXES):
        return "shell"
    if lower.endswith(YAML_SUFFIXES):
        return "yaml"
    if lower.endswith(KEYVALUE_SUFFIXES):
        return "keyvalue"
    if (
        lower in ("dockerfile", "containerfile")
        or lower.startswith("dockerfile.")
        or lower.endswith(".dockerfile")
        or lower == "procfile"
        or lower.startswith("procfile.")
    ):
        return "shell"
    if "." not in name and _has_shell_shebang(path):
        return "shell"
    return None


def _has_shell_shebang(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    if not head.startswith(b"#!"):
        return False
    first = head.split(b"\n", 1)[0]
    return any(shell in first for shell in (b"sh", b"bash", b"dash", b"zsh"))


def file_kind(path: Path) -> str | None:
    """"python" for .py files, a launch kind for launch files, None for the rest."""
    if path.suffix == ".py":
        return "python"
    return launch_kind(path)


def _excluded(path: Path, root: Path | None, patterns: tuple[str, ...], folder: Path | None = None) -> bool:
    """True when a glob matches the path (relative to the config's directory) or its name.

    folder is the resolved folder that holds path, when the caller knows it:
    for a path that is no symbolic link, that spares resolving it again.
    """
    if not patterns:
        return False
    candidates = [path.name]
    if root is not None:
        try:
            if folder is not None and not path.is_symlink():
                relative = (folder / path.name).relative_to(root)
            else:
                relative = path.resolve().relative_to(root)
        except ValueError:
            relative = None
        if relative is not None:
            parts = relative.parts
            # Each leading directory too, so "build" or "labs/*" excludes a whole tree.
            candidates.extend("/".join(parts[: index + 1]) for index in range(len(parts)))
    return any(fnmatch.fnmatchcase(candidate, pattern) for pattern in patterns for candidate in candidates)


def walk(given: Path, exclude: tuple[str, ...] = (), root: Path | None = None):
    """Yield (path, kind) for every file to audit under given, in a stable order.

    A given file is audited whatever its name: one without an extension is
    read as shell lines (an `entrypoint`), one with an unknown extension comes
    back as kind None for the caller to report. A folder that cannot be listed
    comes back as kind "unlisted:<reason>". Exclude globs and skipped
    directory names only apply to what the walk meets below a given directory.
    """
    if given.is_file():
        kind = file_kind(given)
        yield given, kind or ("shell" if not given.suffix else None)
        return
    unlisted: list[OSError] = []
    for directory, dirnames, filenames in os.walk(given, onerror=unlisted.append):
        # A folder that cannot be listed is reported like a file that cannot be read, never passed over.
        while unlisted:
            error = unlisted.pop()
            yield Path(error.filename or directory), "unlisted:" + (error.strerror or str(error))
        base = Path(directory)
        folder = base.resolve() if exclude and root is not None else None
        kept = []
        for dirname in sorted(dirnames):
            if dirname in SKIPPED_DIRS:
                continue
            sub = base / dirname
            # A virtualenv under any name: its packages are not the project's code.
            if (sub / "pyvenv.cfg").is_file():
                continue
            if _excluded(sub, root, exclude, folder):
                continue
            kept.append(dirname)
        dirnames[:] = kept
        for filename in sorted(filenames):
            path = base / filename
            kind = file_kind(path)
            if kind is None or _excluded(path, root, exclude, folder):
                continue
            yield path, kind
    for error in unlisted:
        yield Path(error.filename or given), "unlisted:" + (error.strerror or str(error))
