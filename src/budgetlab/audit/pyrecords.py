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


@dataclass(slots=True)
class QuerysetLoop:
    """A for loop over a queryset whose body does work without any try/except."""

    line: int
    column: int
    loop: ast.AST  # the For node's target and iter, unparsed only when reported
    helper: Target | None  # call target when the body is a single call


@dataclass(slots=True)
class ReferenceQuery:
    """A query through a reference model's manager, e.g. Category.objects.all()."""

    model: str
    line: int
    column: int
    in_loop: bool


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
    has_try_handler: bool = False
    local_defs: dict[str, FunctionFacts] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    handlers: list[Handler] = field(default_factory=list)
    queryset_loops: list[QuerysetLoop] = field(default_factory=list)
    reference_queries: list[ReferenceQuery] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)  # pg_stat reads ("R"), clears ("C"), calls ("X")
    scopes: list[tuple[int, list[tuple]]] = field(default_factory=list)  # (line, events) per transaction


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
