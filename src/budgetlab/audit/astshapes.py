"""Small predicates that recognise code shapes in an AST: tasks, catch-alls, querysets, transactions."""

from __future__ import annotations

import ast

from budgetlab.audit.pyrecords import Target

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor)
TRIES = (ast.Try, ast.TryStar) if hasattr(ast, "TryStar") else (ast.Try,)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
CONTEXTS = (ast.Load, ast.Store, ast.Del)
CATCH_ALL = frozenset({"Exception", "BaseException"})
TASK_DECORATORS = frozenset({"shared_task", "periodic_task"})
CACHE_DECORATORS = frozenset({"lru_cache", "cache", "cached"})
MANAGERS = frozenset({"objects", "_default_manager", "_base_manager"})
# Attribute names that only a Django queryset (or manager) has in a chain.
QUERYSET_STEPS = frozenset(
    {
        "objects",
        "_default_manager",
        "_base_manager",
        "iterator",
        "all",
        "filter",
        "exclude",
        "order_by",
        "select_related",
        "prefetch_related",
        "only",
        "defer",
        "distinct",
        "get_queryset",
        "values_list",
        "annotate",
        "select_for_update",
    }
)
# Calls that cannot fail on a row in any way worth isolating: collection
# plumbing and logging. A loop made only of these does no "work".
TRIVIAL_NAMES = frozenset(
    {
        "len", "str", "int", "float", "bool", "list", "dict", "set", "tuple", "min", "max",
        "sum", "sorted", "isinstance", "getattr", "hasattr", "repr", "print", "abs", "round",
        "range", "enumerate", "zip", "id", "type",
    }
)
TRIVIAL_ATTRIBUTES = frozenset(
    {
        "append", "add", "extend", "update", "setdefault", "get", "items", "keys", "values",
        "format", "join", "strip", "lower", "upper", "split", "debug", "info", "warning",
        "warn", "error", "exception", "critical", "log", "incr",
    }
)
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})


def dotted(node: ast.AST) -> tuple[str, ...] | None:
    """("app", "task") for app.task, ("shared_task",) for shared_task, None for anything else."""
    names: list[str] = []
    while type(node) is ast.Attribute:
        names.append(node.attr)
        node = node.value
    if type(node) is not ast.Name:
        return None
    names.append(node.id)
    names.reverse()
    return tuple(names)


def call_target(func: ast.AST) -> Target | None:
    """How a call names its callee, in a form the resolver understands."""
    kind = type(func)
    if kind is ast.Name:
        return ("n", func.id)
    if kind is ast.Attribute:
        base = dotted(func.value)
        if base is None:
            return None
        if base in (("self",), ("cls",)):
            return ("s", func.attr)
        return ("a", base, func.attr)
    return None


def decorator_names(node) -> list[tuple[str, ...]]:
    names = []
    for decorator in node.decorator_list:
        if type(decorator) is ast.Call:
            decorator = decorator.func
        name = dotted(decorator)
        if name:
            names.append(name)
    return names


def is_task_decorator(name: tuple[str, ...]) -> bool:
    last = name[-1]
    return last in TASK_DECORATORS or (last == "task" and (len(name) > 1 or name == ("task",)))


def terminal_name(node: ast.AST) -> str | None:
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute:
        return node.attr
    return None


def contains_raise(statements: list[ast.stmt]) -> bool:
    """True when a raise statement appears anywhere in the statements (not in nested defs)."""
    stack = list(statements)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Raise:
            return True
        if kind in FUNCTIONS or kind is ast.ClassDef or kind is ast.Lambda:
            continue
        if isinstance(node, ast.stmt):
            stack.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt))
            if kind is ast.Try or kind in TRIES:
                for handler in node.handlers:
                    stack.extend(handler.body)
            elif kind is ast.Match:
                for case in node.cases:
                    stack.extend(case.body)
    return False


def statements_in(body: list[ast.stmt]):
    """Every statement in body, nested blocks included, nested defs excluded."""
    stack = list(body)
    while stack:
        node = stack.pop()
        yield node
        kind = type(node)
        if kind in FUNCTIONS or kind is ast.ClassDef:
            continue
        for name in ("body", "orelse", "finalbody"):
            stack.extend(getattr(node, name, ()))
        for handler in getattr(node, "handlers", ()):
            stack.extend(handler.body)
        for case in getattr(node, "cases", ()):
            stack.extend(case.body)


def isolated(body: list[ast.stmt]) -> bool:
    """True when the loop body holds a try with at least one except clause."""
    return any(type(node) in TRIES and node.handlers for node in statements_in(body))


def is_log_call(call: ast.Call) -> bool:
    func = call.func
    if type(func) is ast.Attribute and func.attr in LOG_METHODS:
        base = terminal_name(func.value) or ""
        return "log" in base.lower()
    return type(func) is ast.Name and func.id == "print"


def does_work(body: list[ast.stmt]) -> bool:
    """True when the loop body calls anything beyond collection plumbing and logging."""
    for statement in statements_in(body):
        for node in ast.walk(statement) if type(statement) not in FUNCTIONS else ():
            if type(node) is not ast.Call:
                continue
            func = node.func
            if type(func) is ast.Name and func.id in TRIVIAL_NAMES:
                continue
            if type(func) is ast.Attribute and func.attr in TRIVIAL_ATTRIBUTES:
                continue
            return True
    return False


def single_helper(body: list[ast.stmt]) -> Target | None:
    """The callee when the loop body is one call (logging, pass and continue aside)."""
    remaining = []
    for statement in body:
        kind = type(statement)
        if kind in (ast.Pass, ast.Continue):
            continue
        if kind is ast.Expr and type(statement.value) is ast.Constant:
            continue
        if kind is ast.Expr and type(statement.value) is ast.Call and is_log_call(statement.value):
            continue
        remaining.append(statement)
    if len(remaining) != 1:
        return None
    statement = remaining[0]
    value = getattr(statement, "value", None)
    if type(statement) in (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign) and type(value) is ast.Call:
        return call_target(value.func)
    return None


def is_queryset(node: ast.AST, names: set[str]) -> bool:
    """True for an expression that reads like a queryset: it ends in .filter(), .all(), .iterator()...

    The outermost step decides: `Invoice.objects.get(pk=1)` is a row and
    `job.csv_text.splitlines()` a list, although both start from a manager or
    a row; a name counts when it was assigned a queryset earlier.
    """
    while True:
        kind = type(node)
        if kind is ast.Call or kind is ast.Subscript:
            node = node.func if kind is ast.Call else node.value
        elif kind is ast.Attribute:
            return node.attr in QUERYSET_STEPS
        elif kind is ast.Name:
            return node.id in names
        else:
            return False


def is_transaction(node: ast.AST) -> bool:
    """True for transaction.atomic(...), atomic(), or a psycopg conn.transaction()."""
    if type(node) is ast.Call:
        node = node.func
    name = terminal_name(node)
    return name == "atomic" or (name == "transaction" and type(node) is ast.Attribute)
