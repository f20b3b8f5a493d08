"""BL007: on a Redis broker, an acks_late task whose hard limit (or a countdown) reaches the visibility timeout.

Kombu's Redis transport hands an unacknowledged message to another worker
once it is older than `visibility_timeout` (3600 s unless the transport
options set it), whether or not its first worker still runs it. The rule
reads every audited module at once: the settings that turn acks_late on,
name the broker and set the timeout; the tasks' decorators; and the
countdowns passed to apply_async() and retry() or set as a task's
default_retry_delay. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field

from budgetlab.audit.findings import Finding

DEFAULT_VISIBILITY_TIMEOUT = 3600
# Brokers that acknowledge by themselves: no visibility timeout to reach.
_OWN_ACKS = ("amqp", "amqps", "pyamqp", "librabbitmq")
_ACKS_LATE = {"task_acks_late", "CELERY_TASK_ACKS_LATE", "CELERY_ACKS_LATE"}
_OPTIONS = {"broker_transport_options", "CELERY_BROKER_TRANSPORT_OPTIONS", "BROKER_TRANSPORT_OPTIONS"}
_BROKER = {"broker_url", "CELERY_BROKER_URL", "BROKER_URL"}
_TIME_LIMIT = {"task_time_limit", "CELERY_TASK_TIME_LIMIT", "CELERYD_TASK_TIME_LIMIT"}
_ARITHMETIC = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv}


@dataclass
class _Project:
    """The settings found anywhere in the audited modules, and the places to judge against them."""

    acks_late: bool = False
    visibility_timeout: float | None = None
    time_limit: float | None = None
    brokers: list[str] = field(default_factory=list)
    # (display, line, column, end_line, task name, hard limit, acks_late of its own or None)
    tasks: list[tuple] = field(default_factory=list)
    # (display, line, column, end_line, countdown)
    countdowns: list[tuple] = field(default_factory=list)


def check_redelivery(sources: list[tuple[str, ast.Module]]) -> list[Finding]:
    """Findings of BL007 over (display path, parsed module) pairs taken together."""
    project = _Project()
    for display, tree in sources:
        _read(display, tree, project)
    if project.brokers and all(url.split(":", 1)[0].lower() in _OWN_ACKS for url in project.brokers):
        return []
    timeout = project.visibility_timeout or DEFAULT_VISIBILITY_TIMEOUT
    source = "visibility_timeout" if project.visibility_timeout else "the default visibility_timeout"
    findings = []
    for display, line, column, end_line, name, limit, own_acks in project.tasks:
        limit = limit if limit is not None else project.time_limit
        acks_late = own_acks if own_acks is not None else project.acks_late
        if acks_late and limit is not None and limit >= timeout:
            findings.append(Finding(display, line, column, "BL007",
                                    f"acks_late task `{name}` may run {_s(limit)} s, but Redis hands its message to "
                                    f"another worker after {_s(timeout)} s ({source})", "warning", end_line))
    for display, line, column, end_line, countdown in project.countdowns:
        if countdown >= timeout:
            findings.append(Finding(display, line, column, "BL007",
                                    f"countdown of {_s(countdown)} s: Redis hands the waiting message to another "
                                    f"worker after {_s(timeout)} s ({source})", "warning", end_line))
    return findings


def _s(seconds: float) -> str:
    """7200 for 7200.0, 0.5 for 0.5: the number as a person wrote it."""
    return str(int(seconds)) if seconds == int(seconds) else f"{seconds:g}"


def _read(display: str, tree: ast.Module, project: _Project) -> None:
    constants: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _number(node.value, constants)
            if value is not None:
                constants[node.targets[0].id] = value
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _setting(_setting_name(target), node.value, constants, project)
        elif isinstance(node, ast.Call):
            _call(display, node, constants, project)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _task(display, node, constants, project)


def _setting_name(target: ast.expr) -> str | None:
    """`task_acks_late` for `task_acks_late = ...` and for `app.conf.task_acks_late = ...`."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    return None


def _setting(name: str | None, value: ast.expr, constants: dict, project: _Project) -> None:
    if name in _ACKS_LATE and isinstance(value, ast.Constant):
        project.acks_late = value.value is True
    elif name in _OPTIONS and isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            if isinstance(key, ast.Constant) and key.value == "visibility_timeout":
                project.visibility_timeout = _number(item, constants)
    elif name in _BROKER and isinstance(value, ast.Constant) and isinstance(value.value, str):
        project.brokers.append(value.value)
    elif name in _TIME_LIMIT:
        project.time_limit = _number(value, constants)


def _call(display: str, node: ast.Call, constants: dict, project: _Project) -> None:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    if name == "update":  # app.conf.update(task_acks_late=True, broker_transport_options={...})
        for key, value in keywords.items():
            _setting(key, value, constants, project)
    elif name == "Celery" and isinstance(keywords.get("broker"), ast.Constant):
        project.brokers.append(str(keywords["broker"].value))
    elif name in ("apply_async", "retry") and "countdown" in keywords:
        countdown = _number(keywords["countdown"], constants)
        if countdown is not None:
            project.countdowns.append((display, node.lineno, node.col_offset + 1, node.end_lineno or 0, countdown))


def _task(display: str, node, constants: dict, project: _Project) -> None:
    for decorator in node.decorator_list:
        call = decorator if isinstance(decorator, ast.Call) else None
        func = call.func if call else decorator
        label = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if label not in ("task", "shared_task"):
            continue
        keywords = {keyword.arg: keyword.value for keyword in (call.keywords if call else []) if keyword.arg}
        name = keywords.get("name")
        task_name = name.value if isinstance(name, ast.Constant) else node.name
        limit = _number(keywords["time_limit"], constants) if "time_limit" in keywords else None
        own = keywords.get("acks_late")
        own_acks = own.value is True if isinstance(own, ast.Constant) else None
        project.tasks.append((display, decorator.lineno, decorator.col_offset + 1, decorator.end_lineno or 0,
                              task_name, limit, own_acks))
        # self.retry() without a countdown waits default_retry_delay: a countdown all the same.
        delay = _number(keywords["default_retry_delay"], constants) if "default_retry_delay" in keywords else None
        if delay is not None:
            project.countdowns.append((display, decorator.lineno, decorator.col_offset + 1, decorator.end_lineno or 0,
                                       delay))
        return


def _number(node: ast.expr, constants: dict) -> float | None:
    """The value of a number, a name bound to one at module level, or arithmetic on them; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _number(node.left, constants), _number(node.right, constants)
        if left is not None and right is not None:
            try:
                return float(_ARITHMETIC[type(node.op)](left, right))
            except ZeroDivisionError:
                return None
    return None
