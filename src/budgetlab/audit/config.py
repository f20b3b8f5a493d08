"""Reads `[tool.budgetlab.audit]` from the nearest pyproject.toml and merges CLI options."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib  # novermin: 3.10 reads tomli below
except ModuleNotFoundError:  # Python 3.10: the same parser under its old name.
    import tomli as tomllib  # type: ignore[no-redef]

from budgetlab.audit.rules import SELECTABLE, UnknownCode, expand_codes, split_codes

#: Every key of [tool.budgetlab.audit], with what it holds; `--help` prints this table.
KEYS = {
    "select": "rule codes or prefixes to run (default: all)",
    "ignore": "rule codes or prefixes to skip",
    "exclude": "globs of files and folders not to walk into",
    "reference-models": "model class names read as reference data (BL004); default: inferred from data migrations",
    "task-decorators": "decorator names that make a Celery task, beyond what the audit resolves itself",
}
KNOWN_KEYS = set(KEYS)


class ConfigError(ValueError):
    """A pyproject.toml that cannot be used; the message is one line."""


@dataclass(frozen=True)
class Config:
    """Settings for the files under one given path."""

    enabled: frozenset[str] = frozenset(SELECTABLE)
    reference_models: frozenset[str] = frozenset()
    task_decorators: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    root: Path | None = None  # directory of the pyproject.toml, for exclude globs
    source: str | None = None  # path of that pyproject.toml, for messages
    _key: tuple = field(default=(), compare=False, repr=False)


def find_pyproject(start: Path) -> Path | None:
    """Nearest pyproject.toml at or above start that has a [tool.budgetlab.audit] table.

    A pyproject.toml without that table is passed over, as ruff does, so a
    project that keeps its audit settings at the top is not shadowed by a
    nested package's pyproject.toml.
    """
    directory = start if start.is_dir() else start.parent
    directory = directory.resolve()
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file():
            if _audit_table(candidate) is not None:
                return candidate
    return None


def _audit_table(pyproject: Path) -> dict | None:
    try:
        raw = pyproject.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{pyproject}: cannot read ({exc.strerror})") from None
    # Most pyproject.toml files never mention the tool; skip parsing them.
    if b"budgetlab" not in raw:
        return None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: invalid TOML ({exc})") from None
    table = data.get("tool", {}).get("budgetlab", {}).get("audit")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{pyproject}: [tool.budgetlab.audit] must be a table")
    return table


def _string_list(table: dict, key: str, source: Path) -> list[str] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str) and key in ("select", "ignore"):
        return split_codes(value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    raise ConfigError(f"{source}: '{key}' in [tool.budgetlab.audit] must be a list of strings")


def load_config(
    path: Path,
    cli_select: list[str] | None,
    cli_ignore: list[str] | None,
    cache: dict[Path | None, Config] | None = None,
) -> Config:
    """Config for the files under path: pyproject values, then CLI options on top.

    A CLI --select replaces the file's select, a CLI --ignore replaces its
    ignore; the rules that run are the selected ones minus the ignored ones.
    """
    pyproject = find_pyproject(path)
    if cache is not None and pyproject in cache:
        return cache[pyproject]
    table = _audit_table(pyproject) if pyproject else {}
    table = table or {}
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(KNOWN_KEYS))
        raise ConfigError(
            f"{pyproject}: unknown key '{unknown[0]}' in [tool.budgetlab.audit] (known: {known})"
        )
    where = f"{pyproject} [tool.budgetlab.audit]"
    try:
        if cli_select is not None:
            selected = expand_codes(cli_select, "--select")
        else:
            file_select = _string_list(table, "select", pyproject)
            selected = expand_codes(file_select, where) if file_select is not None else set(SELECTABLE)
        if cli_ignore is not None:
            ignored = expand_codes(cli_ignore, "--ignore")
        else:
            ignored = expand_codes(_string_list(table, "ignore", pyproject) or [], where)
    except UnknownCode as exc:
        raise ConfigError(str(exc)) from None
    models = _string_list(table, "reference-models", pyproject) or []
    decorators = _string_list(table, "task-decorators", pyproject) or []
    exclude = _string_list(table, "exclude", pyproject) or []
    config = Config(
        enabled=frozenset(selected - ignored),
        reference_models=frozenset(models),
        # "tasks.periodic" and "periodic" both name the decorator by its last part.
        task_decorators=frozenset(name.rsplit(".", 1)[-1] for name in decorators),
        exclude=tuple(exclude),
        root=pyproject.parent if pyproject else None,
        source=os.fspath(pyproject) if pyproject else None,
    )
    if cache is not None:
        cache[pyproject] = config
    return config
