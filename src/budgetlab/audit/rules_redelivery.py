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
from dataclasses import dataclass, field

from budgetlab.audit.astshapes import FUNCTIONS, terminal_name
from budgetlab.audit.findings import Finding
from budgetlab.audit.task_options import TaskDeclaration, as_written, module_constants, number, task_declarations

DEFAULT_VISIBILITY_TIMEOUT = 3600
# Brokers that acknowledge by themselves: no visibility timeout to reach.
_OWN_ACKS = ("amqp", "amqps", "pyamqp", "librabbitmq")
_ACKS_LATE = {"task_acks_late", "CELERY_TASK_ACKS_LATE", "CELERY_ACKS_LATE"}
_OPTIONS = {"broker_transport_options", "CELERY_BROKER_TRANSPORT_OPTIONS", "BROKER_TRANSPORT_OPTIONS"}
_BROKER = {"broker_url", "CELERY_BROKER_URL", "BROKER_URL"}
_TIME_LIMIT = {"task_time_limit", "CELERY_TASK_TIME_LIMIT", "CELERYD_TASK_TIME_LIMIT"}
# Parts of every name above, of `Celery(broker=...)` and of `countdown=`, in either case.
_WORDS = (b"acks_late", b"ACKS_LATE", b"ransport_options", b"RANSPORT_OPTIONS", b"roker", b"ROKER",
          b"ime_limit", b"IME_LIMIT", b"countdown")


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


def check_redelivery(sources: list[tuple[str, ast.Module, bytes]]) -> list[Finding]:
    """Findings of BL007 over (display path, parsed module, its bytes) triples taken together."""
    project = _Project()
    for display, tree, data in sources:
        read_module(display, tree, data, project)
    return judge(project)


def new_project() -> _Project:
    """An empty record of the settings and places, filled module by module with read_module()."""
    return _Project()


def judge(project: _Project) -> list[Finding]:
    """BL007's findings once every module has been read into the project."""
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
                                    f"acks_late task `{name}` may run {as_written(limit)} s, but Redis hands its message to "
                                    f"another worker after {as_written(timeout)} s ({source})", "warning", end_line))
    for display, line, column, end_line, countdown in project.countdowns:
        if countdown >= timeout:
            findings.append(Finding(display, line, column, "BL007",
                                    f"countdown of {as_written(countdown)} s: Redis hands the waiting message to another "
                                    f"worker after {as_written(timeout)} s ({source})", "warning", end_line))
    return findings


def read_module(display: str, tree: ast.Module, data: bytes, project: _Project) -> None:
    """Add one module's settings, tasks and countdowns to the project.

    Every setting and call the rule reads spells one of _WORDS in the source,
    and every task decorator it reads says `task`: a module without them is
    passed over without walking its tree, which most modules are.
    """
    if any(word in data for word in _WORDS):
        constants = module_constants(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _setting(_setting_name(target), node.value, constants, project)
            elif isinstance(node, ast.Call):
                _call(display, node, constants, project)
    else:
        constants = None
    if b"task" in data:
        for declared in task_declarations(tree):
            if type(declared.node) in FUNCTIONS:
                _task(display, declared, module_constants(tree) if constants is None else constants, project)


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
                project.visibility_timeout = number(item, constants)
    elif name in _BROKER and isinstance(value, ast.Constant) and isinstance(value.value, str):
        project.brokers.append(value.value)
    elif name in _TIME_LIMIT:
        project.time_limit = number(value, constants)


def _call(display: str, node: ast.Call, constants: dict, project: _Project) -> None:
    name = terminal_name(node.func) or ""
    keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    if name == "update":  # app.conf.update(task_acks_late=True, broker_transport_options={...})
        for key, value in keywords.items():
            _setting(key, value, constants, project)
    elif name == "Celery" and isinstance(keywords.get("broker"), ast.Constant):
        project.brokers.append(str(keywords["broker"].value))
    elif name in ("apply_async", "retry") and "countdown" in keywords:
        countdown = number(keywords["countdown"], constants)
        if countdown is not None:
            project.countdowns.append((display, node.lineno, node.col_offset + 1, node.end_lineno or 0, countdown))


def _task(display: str, declared: TaskDeclaration, constants: dict, project: _Project) -> None:
    options, decorator = declared.options, declared.anchor
    limit = number(options["time_limit"], constants) if "time_limit" in options else None
    own = options.get("acks_late")
    own_acks = own.value is True if isinstance(own, ast.Constant) else None
    project.tasks.append((display, decorator.lineno, decorator.col_offset + 1, decorator.end_lineno or 0,
                          declared.registered, limit, own_acks))
    # self.retry() without a countdown waits default_retry_delay: a countdown all the same.
    delay = number(options["default_retry_delay"], constants) if "default_retry_delay" in options else None
    if delay is not None:
        project.countdowns.append((display, decorator.lineno, decorator.col_offset + 1, decorator.end_lineno or 0,
                                   delay))
