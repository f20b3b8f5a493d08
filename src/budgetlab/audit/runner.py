"""Runs an audit: finds the files, reads each once, applies the rules, filters by config and noqa."""

from __future__ import annotations

import dataclasses
import gc
import os
from pathlib import Path

from budgetlab.audit.config import ConfigError, load_config
from budgetlab.audit.discovery import walk
from budgetlab.audit.findings import AuditResult, Finding, Skipped
from budgetlab.audit.launch_values import LaunchValues
from budgetlab.audit.noqa import silenced
from budgetlab.audit.pyfacts import collect
from budgetlab.audit.rules_launch import check_launch_file
from budgetlab.audit.rules_pool import DROPS, declared_limits, dropped, launch_pools, message, pool_settings
from budgetlab.audit.rules_python import check_python
from budgetlab.audit.retry_sites import ModuleReader
from budgetlab.audit.rules_redelivery import judge, new_project, read_module
from budgetlab.audit.rules_retry import check_retries, expiring_sends, reads_module
from budgetlab.audit.sources import (
    Unreadable,
    decode_text,
    parse_python,
    python_lines,
    read_bytes,
)


class UsageError(ValueError):
    """Bad input from the person running the audit; the message is one line."""


def display_path(path: Path, cwd: Path) -> str:
    """The path as printed: relative to the working directory when inside it."""
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        return path.as_posix()


def audit(paths: list[str], select: list[str] | None = None, ignore: list[str] | None = None) -> AuditResult:
    """Audit the given files and directories; raise UsageError on bad paths or options."""
    # Parsing allocates millions of AST nodes, freed by reference counting as
    # soon as a file's facts are taken; the cycle collector would only rescan
    # them, about a quarter of the run time on Django's tree.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _audit(paths, select, ignore)
    finally:
        if collecting:
            gc.enable()


def _audit(paths: list[str], select: list[str] | None, ignore: list[str] | None) -> AuditResult:
    if not paths:
        raise UsageError("no path given")
    cwd = Path.cwd().resolve()
    cache: dict = {}
    work: list[tuple[Path, str | None, object]] = []
    seen: set[Path] = set()
    for given in paths:
        path = Path(given)
        if not path.exists():
            raise UsageError(f"path not found: {given}")
        try:
            config = load_config(path, select, ignore, cache)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        for file, kind in walk(path, config.exclude, config.root):
            absolute = file.resolve()
            if absolute not in seen:
                seen.add(absolute)
                work.append((absolute, kind, config))

    result = AuditResult()
    enabled = set().union(*(config.enabled for _, _, config in work)) if work else set()
    # BL007 and BL008 read what they need from each tree while it is at hand, so every file is parsed once.
    redelivery = new_project() if "BL007" in enabled else None
    readers: dict[str, ModuleReader] = {}
    expiring: set[str] = set()
    worker_limits: list[str] = []
    hard_flags: list[tuple[str, float | None]] = []
    modules = []
    python_sources: dict[str, tuple[bytes, object]] = {}
    pools: list[tuple[Finding, str, object]] = []  # BL006 candidates: where a worker picks its pool, and which
    values = LaunchValues()  # what launch files set variables to, for a pool named through one
    for absolute, kind, config in work:
        display = display_path(absolute, cwd)
        if kind is None:
            result.skipped.append(Skipped(display, "not a Python or launch file"))
            continue
        try:
            if kind.startswith("unlisted:"):
                raise Unreadable(f"cannot list folder: {kind.partition(':')[2]}")
            data = read_bytes(absolute)
            if kind == "python":
                tree = parse_python(data, display)
            else:
                text = decode_text(data)
        except Unreadable as exc:
            result.unread += 1
            result.findings.append(Finding(display, 1, 1, "BL000", _capitalised(str(exc)), "error"))
            continue
        result.files += 1
        result.lines += data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        if kind == "python":
            modules.append(collect(tree, absolute, display, config.reference_models, data, config.task_decorators))
            python_sources[display] = (data, config)
            if redelivery is not None:
                read_module(display, tree, data, redelivery)
            if "BL008" in enabled:
                if reads_module(data, config.task_decorators):
                    readers[display] = ModuleReader(display, tree, config.task_decorators)
                expiring |= expiring_sends(tree, data)
            pools.extend((Finding(display, line, column, "BL006", "The worker configured here"), pool, config)
                         for line, column, pool in pool_settings(data))
            del tree
        else:
            pools.extend((finding, pool, config) for finding, pool in launch_pools(display, text, kind))
            values.read(display, text, kind)
            findings = check_launch_file(display, text, kind, worker_limits, hard_flags)
            if "BL001" in config.enabled and findings:
                result.findings.extend(findings)
                result.sources[display] = text.splitlines()

    if modules and enabled - {"BL001"}:
        later = (redelivery, readers, expiring)
        for finding in _python_findings(modules, enabled, worker_limits, python_sources, later):
            data, config = python_sources[finding.path]
            if finding.code not in config.enabled:
                continue
            lines = result.sources.get(finding.path)
            if lines is None:
                lines = result.sources[finding.path] = python_lines(data)
            statement = lines[finding.line - 1 : max(finding.line, finding.end_line)]
            if any(silenced(line, finding.code) for line in statement):
                continue
            result.findings.append(_character_column(finding, statement[0] if statement else ""))
    result.findings.extend(_pool_findings(pools, values, modules, (worker_limits, hard_flags), python_sources, result))
    result.findings = sorted(set(result.findings))
    result.skipped.sort()
    return result


def _pool_findings(pools, values, modules, flags, python_sources, result) -> list[Finding]:
    """BL006: each worker on a pool that drops a limit the tree declares.

    A pool named through a variable or a Helm value counts with each value a launch file gives it.
    """
    chosen = []
    for finding, word, config in pools:
        if "BL006" not in config.enabled:
            continue
        dropping = [(pool, source) for pool, source in values.resolve(word) if pool in DROPS]
        if dropping:
            chosen.append((finding, dropping[0]))
    declared = declared_limits(modules, *flags) if chosen else []
    found = []
    for finding, (pool, source) in chosen:
        limits = dropped(pool, declared)
        if not limits:
            continue
        if finding.path in python_sources:
            lines = result.sources.get(finding.path)
            if lines is None:
                lines = result.sources[finding.path] = python_lines(python_sources[finding.path][0])
            if silenced(lines[finding.line - 1], "BL006"):
                continue
        else:
            result.sources.setdefault(finding.path, [])
        found.append(dataclasses.replace(finding, message=message(finding.message, pool, limits, source)))
    return found


def _python_findings(modules, enabled: set[str], worker_limits, python_sources: dict, later):
    """The Python rules' findings; later holds what BL007 and BL008 read in the first pass.

    A module is parsed again only where BL008 follows a helper that raises
    Retry into a caller whose module never mentions a retry.
    """
    yield from check_python(modules, enabled, worker_limits)
    redelivery, readers, expiring = later
    if redelivery is not None:
        yield from judge(redelivery)
    if "BL008" in enabled:

        def tree_of(display: str):
            return parse_python(python_sources[display][0], display)

        yield from check_retries(readers, expiring, {display: (data, config.task_decorators)
                                                     for display, (data, config) in python_sources.items()},
                                 tree_of, modules)


def _capitalised(reason: str) -> str:
    """"cannot parse (...)" as a title: "Cannot parse (...)"."""
    return reason[:1].upper() + reason[1:]


def _character_column(finding: Finding, line: str) -> Finding:
    """The parser counts columns in UTF-8 bytes; people and SARIF count characters."""
    if line.isascii():
        return finding
    encoded = line.encode("utf-8")
    column = len(encoded[: finding.column - 1].decode("utf-8", "ignore")) + 1
    return dataclasses.replace(finding, column=column)


def relative_uri(display: str) -> str:
    """URI for SARIF: a relative path as is, an absolute one as a file: URI."""
    return Path(display).as_uri() if os.path.isabs(display) else display
