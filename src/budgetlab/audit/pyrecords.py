"""Records of what a Python module's functions do, written by the fact collector and read by the rules."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

Target = tuple  # ("n", name) | ("s", method) | ("a", (base, names), attribute)


@dataclass(slots=True)
class Call:
    """A call by a name the rules may resolve to a function in the audited tree."""

    target: Target
    in_loop: bool
    line: int
    column: int


@dataclass(slots=True)
class Handler:
    """A catch-all except clause with nothing before it that lets the soft limit through."""

    label: str
    line: int
    column: int
    in_loop: bool
    end_line: int = 0


@dataclass(slots=True)
class QuerysetLoop:
    """A for loop over a queryset whose body does work without a try/except that isolates a row."""

    line: int
    column: int
    loop: ast.AST  # the For node's target and iter, unparsed only when reported
    #: Each call in the body that does work on a row: (its call target, or None; whether it writes).
    work: tuple[tuple[Target | None, bool], ...] = ()
    writes: bool = False  # the body calls .save(), .delete(), .create()... itself
    end_line: int = 0  # last line of the `for ... :` header
    related: bool = False  # over one row's relation (`invoice.lines.all()`), not a queryset of its own
    gathered: frozenset[str] = frozenset()  # the loop's source name and the lists it appends to
    #: The innermost `try` of the function around the whole loop: (its first handler, as written; that line).
    enclosing_try: tuple[str, int] | None = None


@dataclass(slots=True)
class ReferenceQuery:
    """A query through a reference model's manager, e.g. Category.objects.all()."""

    model: str
    line: int
    column: int
    in_loop: bool
    end_line: int = 0


@dataclass(eq=False)
class FunctionFacts:
    """What one function (or a module's top level, named "<module>") does, as far as the rules care."""

    name: str
    qualname: str
    line: int
    module: ModuleFacts
    parent: FunctionFacts | None = None
    class_name: str | None = None
    is_task: bool = False
    is_cached: bool = False
    is_atomic: bool = False
    autocommit: bool = False
    opens_connection: bool = False  # psycopg.connect() without autocommit: a transaction of its own
    manual_transaction: bool = False  # set_autocommit(False) on a shared connection
    #: Holds a try whose handler catches every error and goes on (astshapes.isolates).
    isolating_try: bool = False
    #: Calls a task decorator in its body (app.task(...), shared_task(...)): a decorator of the project's own.
    wraps_task: bool = False
    #: Where this task's own soft limit is set ("decorator", "class"), or None.
    soft_limit: str | None = None
    #: A decorator of the project's own was called with soft_time_limit=: the task's limit, once it resolves.
    decorator_soft_limit: bool = False
    #: The limits its decorator or Task class sets: "soft" and "hard" -> seconds, or None where unreadable.
    limits: dict[str, float | None] = field(default_factory=dict)
    #: Makes a call anywhere in its body (nested functions aside).
    makes_calls: bool = False
    #: Every call that does something a row could fail (astshapes.effect_call, or a write): not plumbing,
    #: logging, a CSV or log write, or queueing a task; as (its call target or None, whether it writes).
    row_work: list[tuple[Target | None, bool]] = field(default_factory=list)
    #: The work of its statements: calls made for their effect and writes, as (call target or None, writes).
    work: list[tuple[Target | None, bool]] = field(default_factory=list)
    decorators: list[Target] = field(default_factory=list)  # resolved later: a project's own task decorators
    bulk_writes: list[tuple[int, str]] = field(default_factory=list)  # (line, first argument) of .bulk_update()/.bulk_create()
    local_types: dict[str, str] = field(default_factory=dict)  # name -> model class name, where known
    model_aliases: dict[str, str] = field(default_factory=dict)  # `Invoice = apps.get_model(...)`: name -> "Invoice"
    local_defs: dict[str, FunctionFacts] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    queryset_loops: list[QuerysetLoop] = field(default_factory=list)
    reference_queries: list[ReferenceQuery] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)  # pg_stat reads ("R"), clears ("C"), calls ("X")
    scopes: list[tuple[int, list[tuple]]] = field(default_factory=list)  # (line, events) per transaction

    @property
    def no_row_work(self) -> bool:
        """Only queues tasks, writes CSV or log lines, or builds collections: nothing a row could fail on."""
        return self.makes_calls and not self.row_work


@dataclass(eq=False)
class ModuleFacts:
    """Facts of one module, with what its names import, for resolving calls across modules."""

    path: Path
    display: str
    functions: list[FunctionFacts] = field(default_factory=list)
    top_defs: dict[str, FunctionFacts] = field(default_factory=dict)
    classes: dict[str, dict[str, FunctionFacts]] = field(default_factory=dict)
    # local name -> ("module", dotted, level) or ("from", dotted, level, attribute)
    imports: dict[str, tuple] = field(default_factory=dict)
    has_tasks: bool = False
    mentions_pg_stat: bool = False
    #: Line of a project-wide soft time limit (task_soft_time_limit, CELERY_TASK_SOFT_TIME_LIMIT), or 0.
    soft_limit_setting: int = 0
    #: The project-wide limits the module sets: "soft" and "hard" -> (line, seconds or None where unreadable).
    limit_settings: dict[str, tuple[int, float | None]] = field(default_factory=dict)
    #: Module-level name -> the call target of the class it holds an instance of (`retry = retryable_task()`).
    instances: dict[str, Target] = field(default_factory=dict)
    #: Functions and methods whose return value is a queryset (`return Invoice.objects.filter(...)`).
    queryset_helpers: frozenset[str] = frozenset()
    #: What the module's path says it is: "app", "test", "migration", "seed" or "admin" (reference_data.module_role).
    role: str = "app"
    #: Model classes the module defines (in a models module), and models it writes in any way the audit sees.
    model_classes: set[str] = field(default_factory=set)
    model_writes: set[str] = field(default_factory=set)
    #: Models written with rows spelled out as literals (`Currency.objects.create(code="EUR")`): seeding, not copying.
    model_seeds: set[str] = field(default_factory=set)
    #: True when reference models were inferred, not configured: every read-only manager query is recorded.
    infer_references: bool = False
    #: Class name -> its base class names, for task classes and model classes.
    class_bases: dict[str, list[str]] = field(default_factory=dict)
