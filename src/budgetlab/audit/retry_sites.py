"""Reads, function by function, where a module retries a Celery task and which handler each retry would meet.

A retry call is `self.retry(...)` in a bound task or in a method of a Task
class, `current_task.retry(...)`, or any `X.retry(...)` given one of
Task.retry's own keywords (exc, countdown, eta, max_retries): a model's
`hook_log.retry()` is not one. `throw=False` makes it raise nothing, so it
is not recorded. A resend is a task sending itself again by hand
(`task.apply_async(...)`, `self.apply_async(...)`) from an except handler.

For each retry and each other call the reader notes its fate, the first
enclosing handler that would catch the `Retry` it raises: swallowed by a
catch-all that does not re-raise it, handled on purpose by an
`except Retry:` that does not re-raise, or escaping the function.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property

from budgetlab.audit.astshapes import CATCH_ALL, FUNCTIONS, TRIES, call_target, contains_raise, terminal_name
from budgetlab.audit.task_options import TaskDeclaration, module_constants, module_dicts, task_classes, \
    task_declarations

# Celery's Retry derives from TaskPredicate, which derives from CeleryError, an Exception
# (celery/exceptions.py lines 137-145): a handler of any of these catches it.
RETRY_CATCHERS = CATCH_ALL | {"CeleryError", "TaskPredicate"}
# Keywords only Task.retry takes (celery/app/task.py line 680): they mark `X.retry(...)` as Celery's.
RETRY_KEYWORDS = frozenset({"exc", "countdown", "eta", "max_retries"})
# Calls that read a clock: a comparison with one is a deadline being checked.
CLOCKS = frozenset({"time", "monotonic", "perf_counter", "now", "utcnow", "time_ns", "monotonic_ns"})


@dataclass(eq=False)
class Site:
    """A retry call (kind "retry") or a task sending itself again from a handler (kind "resend")."""

    call: ast.Call
    kind: str
    #: "swallowed", "handled" or "escapes" (see the module docstring).
    fate: str
    #: The handler (or `with suppress(...)`) that swallows it, when fate is "swallowed".
    catcher: ast.AST | None
    #: Names of the exceptions it is raised after, and the comparisons it sits under (for what triggered it).
    after: tuple[str, ...]


@dataclass(eq=False)
class Function:
    """One function's retries, its other calls with their fates, and whether it checks a deadline."""

    node: ast.AST
    reader: ModuleReader
    #: The task this function is, or whose class it is a method of; None elsewhere.
    task: TaskDeclaration | None
    #: `self` here is a Celery task: a bound task, or a method of a Task class.
    self_is_task: bool
    sites: list[Site] = field(default_factory=list)
    #: (line, column) of each call that may reach another function -> its (fate, catcher).
    calls: dict[tuple[int, int], tuple[str, ast.AST | None]] = field(default_factory=dict)
    #: Compares a clock with something, or names a deadline or an expiry: the total time is watched.
    watches_time: bool = False

    @property
    def is_entry(self) -> bool:
        """The task itself (its function, or its class's `run`): a Retry raised here reaches the worker."""
        return self.task is not None and (self.task.node is self.node or self.node.name == "run")

    @cached_property
    def assigned(self) -> dict[str, list]:
        """Local name -> the values assigned to it, for reading a countdown's expression."""
        return assignments(self.node)


class ModuleReader:
    """Reads one parsed module once; `functions` maps each function node to its Function."""

    def __init__(self, display: str, tree: ast.Module, task_decorators: frozenset[str] = frozenset()) -> None:
        self.display = display
        self.constants = module_constants(tree)
        self.dicts = module_dicts(tree)
        self.tasks = task_declarations(tree, task_decorators)
        self.top_functions = {node.name: node for node in tree.body if type(node) in FUNCTIONS}
        self.tuples = {node.targets[0].id: node.value for node in tree.body if type(node) is ast.Assign
                       and len(node.targets) == 1 and type(node.targets[0]) is ast.Name
                       and type(node.value) in (ast.Tuple, ast.List)}
        self.retry_names = {"Retry"} | {alias.asname for node in _statements(tree) if type(node) is ast.ImportFrom
                                         for alias in node.names if alias.name == "Retry" and alias.asname}
        by_node = {task.node: task for task in self.tasks}
        task_class_names = task_classes(tree)
        self.functions: dict[ast.AST, Function] = {}
        for owner, node in _functions(tree):
            task = by_node.get(node) or (by_node.get(owner) if owner is not None else None)
            bound = node in by_node and _bound(by_node[node].options)
            in_task_class = owner is not None and owner.name in task_class_names
            function = Function(node, self, task, bound or in_task_class)
            _Walker(self, function).statements(node.body, (), (), ())
            function.watches_time = function.watches_time or any(
                "deadline" in argument.arg.lower() for argument in ast.walk(node.args) if type(argument) is ast.arg)
            self.functions[node] = function


def _statements(tree: ast.Module):
    """Every statement of the module, in defs and classes too; an import is one, so expressions are passed over."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if type(children) is list:
                stack.extend(children)


def _functions(tree: ast.Module):
    """(the class a function is a method of, or None; the function) for every function in the module."""
    stack: list[tuple[ast.AST | None, ast.AST]] = [(None, tree)]
    while stack:
        owner, parent = stack.pop()
        for node in ast.iter_child_nodes(parent):
            if type(node) in FUNCTIONS:
                yield owner, node
                stack.append((None, node))
            elif type(node) is ast.ClassDef:
                stack.append((node, node))
            elif not isinstance(node, ast.expr):  # statements, except clauses, match cases: they hold defs
                stack.append((owner, node))


def _bound(options: dict) -> bool:
    bind = options.get("bind")
    return type(bind) is ast.Constant and bind.value is True


class _Walker:
    """Walks a function body with the handlers, except clauses and tests that enclose each statement."""

    def __init__(self, reader: ModuleReader, function: Function) -> None:
        self.reader = reader
        self.function = function

    def statements(self, body: list[ast.stmt], frames: tuple, handled: tuple, tests: tuple) -> None:
        for node in body:
            kind = type(node)
            if kind in FUNCTIONS or kind is ast.ClassDef:
                continue  # a function of its own
            if kind in TRIES:
                self.statements(node.body, frames + (("try", node.handlers),), handled, tests)
                for handler in node.handlers:
                    self.statements(handler.body, frames, handled + tuple(_names(handler.type)), tests)
                self.statements(node.orelse, frames, handled, tests)
                self.statements(node.finalbody, frames, handled, tests)
            elif kind in (ast.With, ast.AsyncWith):
                inner = frames
                for item in node.items:
                    self.expression(item.context_expr, frames, handled, tests)
                    context = item.context_expr
                    if type(context) is ast.Call and terminal_name(context.func) == "suppress":
                        inner = inner + (("suppress", node, {n for a in context.args for n in _names(a)}),)
                self.statements(node.body, inner, handled, tests)
            elif kind in (ast.If, ast.While):
                self.expression(node.test, frames, handled, tests)
                self.statements(node.body, frames, handled, tests + (node.test,))
                self.statements(node.orelse, frames, handled, tests)
            else:
                for name, value in ast.iter_fields(node):
                    if isinstance(value, ast.expr):
                        self.expression(value, frames, handled, tests)
                    elif isinstance(value, list):
                        for item in value:
                            if isinstance(item, ast.expr):
                                self.expression(item, frames, handled, tests)
                            elif isinstance(item, ast.stmt):
                                self.statements([item], frames, handled, tests)
                            elif hasattr(item, "body"):  # match_case, excepthandler of another shape
                                self.statements(item.body, frames, handled, tests)

    def expression(self, root: ast.expr, frames: tuple, handled: tuple, tests: tuple) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is ast.Lambda:
                continue
            if kind is ast.Call:
                self.call(node, frames, handled, tests)
            elif kind is ast.Compare and any(type(part) is ast.Call and terminal_name(part.func) in CLOCKS
                                             for part in ast.walk(node)):
                self.function.watches_time = True
            elif (kind is ast.Name and "deadline" in node.id.lower()) or (
                    kind is ast.Attribute and ("deadline" in node.attr.lower() or node.attr == "expires")):
                self.function.watches_time = True
            stack.extend(ast.iter_child_nodes(node))

    def call(self, node: ast.Call, frames: tuple, handled: tuple, tests: tuple) -> None:
        func = node.func
        if type(func) is ast.Attribute:
            receiver = terminal_name(func.value)
            given = {keyword.arg for keyword in node.keywords}
            if func.attr == "retry" and not _no_throw(node) and (
                    (receiver == "self" and self.function.self_is_task) or receiver == "current_task"
                    or given & RETRY_KEYWORDS):
                fate, catcher = self.fate(frames)
                self.function.sites.append(Site(node, "retry", fate, catcher, handled + _tested(tests)))
                return
            task = self.function.task
            if func.attr in ("apply_async", "delay") and handled and task is not None and type(func.value) in (
                    ast.Name, ast.Attribute) and (receiver == task.name or (receiver == "self" and
                                                                            self.function.self_is_task)):
                self.function.sites.append(Site(node, "resend", "escapes", None, handled + _tested(tests)))
                return
        if call_target(func) is not None:
            self.function.calls[(node.lineno, node.col_offset + 1)] = self.fate(frames)

    def fate(self, frames: tuple) -> tuple[str, ast.AST | None]:
        """What happens to a Retry raised here: the innermost handler that takes it decides."""
        retry_names = self.reader.retry_names
        for frame in reversed(frames):
            if frame[0] == "suppress":
                if frame[2] & (RETRY_CATCHERS | retry_names):
                    return "swallowed", frame[1]
                continue
            for handler in frame[1]:
                names = set(_names(handler.type))
                if names & retry_names:
                    if contains_raise(handler.body):
                        break  # re-raised: the next enclosing try decides
                    return "handled", None
                if handler.type is None or names & RETRY_CATCHERS:
                    if _lets_through(handler, retry_names):
                        break
                    return "swallowed", handler
        return "escapes", None


def assignments(node: ast.AST) -> dict[str, list]:
    """Name -> the values a function assigns to it; an augmented assignment counts as one more, unknown."""
    found: dict[str, list] = {}
    for item in ast.walk(node):
        kind = type(item)
        if kind is ast.Assign:
            for target in item.targets:
                if type(target) is ast.Name:
                    found.setdefault(target.id, []).append(item.value)
        elif kind in (ast.AugAssign, ast.AnnAssign) and type(item.target) is ast.Name:
            found.setdefault(item.target.id, []).append(item.value if kind is ast.AnnAssign else item)
    return found


def short(node: ast.AST, limit: int = 40) -> str:
    """An expression as written, cut to a length a one-line message can carry."""
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _names(node: ast.expr | None) -> list[str]:
    if node is None:
        return []
    elements = node.elts if type(node) is ast.Tuple else [node]
    return [name for name in map(terminal_name, elements) if name]


def _tested(tests: tuple) -> tuple[str, ...]:
    """Names and numbers in the tests that enclose a retry (`status_code == 429`), for what triggered it.

    A comparison of a status code is read as the set of codes it admits
    (`>= 500`, `in range(500, 600)`, `// 100 == 5`, `500 <= status < 600`):
    one that admits 429 or 503 adds "HTTP 429", "HTTP 5xx" or both, with the
    comparison as written, and its numbers are not read one by one (`400 <=
    status < 429` admits no refusal).
    """
    found = []
    for test in tests:
        read: set[int] = set()
        for node in ast.walk(test):
            if type(node) is ast.Compare:
                codes = status_codes(node)
                if codes is not None:
                    read.update(id(part) for part in ast.walk(node))
                    kinds = [label for label, code in (("429", 429), ("5xx", 503)) if code in codes]
                    if kinds:
                        found.append(f"HTTP {' and '.join(kinds)} (`{short(node, 60)}`)")
            if id(node) in read and type(node) is ast.Constant:
                continue
            if type(node) is ast.Constant and isinstance(node.value, int) and not isinstance(node.value, bool):
                found.append(str(node.value))
            elif type(node) in (ast.Name, ast.Attribute):
                found.append(terminal_name(node) or "")
    return tuple(found)


# The codes a status comparison is read over.
_CODES = range(100, 600)


def status_codes(compare: ast.Compare) -> set[int] | None:
    """The HTTP status codes a comparison of a status admits, or None when it compares no status with numbers.

    A status is a name or attribute that says so (`status`, `status_code`,
    `response.status`, `http_code`), or such a name floor-divided by 100.
    """
    admitted = set(_CODES)
    operands = [compare.left, *compare.comparators]
    compared = False
    for left, op, right in zip(operands, compare.ops, operands[1:]):
        for subject, other, flipped in ((left, right, False), (right, left, True)):
            scale = _status_scale(subject)
            if scale is None:
                continue
            allowed = _allowed(op, other, flipped)
            if allowed is None:
                return None
            admitted &= {code for code in _CODES if (code // scale) in allowed}
            compared = True
            break
    return admitted if compared else None


def _status_scale(node: ast.expr) -> int | None:
    """1 for a status, 100 for `status // 100`, None for anything else."""
    if type(node) is ast.BinOp and type(node.op) is ast.FloorDiv and type(node.right) is ast.Constant \
            and node.right.value == 100:
        return 100 if _status_scale(node.left) == 1 else None
    name = terminal_name(node) if type(node) in (ast.Name, ast.Attribute) else None
    if not name:
        return None
    name = name.lower()
    return 1 if "status" in name or name == "code" or name.endswith("_code") else None


_ORDER = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
          ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


def _allowed(op: ast.cmpop, other: ast.expr, flipped: bool) -> set[int] | None:
    """The values of the (scaled) status the comparison with other admits; None when other cannot be read."""
    kind = type(op)
    values = range(0, 600)
    if kind in _ORDER:
        if type(other) is not ast.Constant or not isinstance(other.value, int) or isinstance(other.value, bool):
            return None
        compare = _ORDER[kind]
        return {value for value in values if (compare(other.value, value) if flipped else compare(value, other.value))}
    if kind in (ast.In, ast.NotIn) and not flipped:
        members = _members(other)
        if members is None:
            return None
        return members if kind is ast.In else set(values) - members
    return None


def _members(node: ast.expr) -> set[int] | None:
    """The numbers of a tuple, list or set of literals, or of `range(a, b)`; None for anything else."""
    if type(node) in (ast.Tuple, ast.List, ast.Set):
        numbers = [element.value for element in node.elts if type(element) is ast.Constant]
        if len(numbers) == len(node.elts) and all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            return set(numbers)
        return None
    if type(node) is ast.Call and type(node.func) is ast.Name and node.func.id == "range" and not node.keywords \
            and 1 <= len(node.args) <= 3 and all(type(a) is ast.Constant and isinstance(a.value, int)
                                                 for a in node.args):
        return set(range(*(a.value for a in node.args)))
    return None


def _no_throw(call: ast.Call) -> bool:
    return any(keyword.arg == "throw" and type(keyword.value) is ast.Constant and keyword.value.value is False
               for keyword in call.keywords)


def _lets_through(handler: ast.ExceptHandler, retry_names: set[str]) -> bool:
    """A catch-all passes Retry on when it re-raises what it caught (`raise`, `raise exc`) or tests for Retry first.

    Raising anything else, or calling retry() again, still loses the retry
    that was already sent: the run fails, or queues a second retry.
    """
    for statement in handler.body:
        if type(statement) is ast.Raise and (statement.exc is None or (
                type(statement.exc) is ast.Name and statement.exc.id == handler.name)):
            return True
    first = handler.body[0] if handler.body else None
    if type(first) is ast.If and type(first.test) is ast.Call and terminal_name(first.test.func) == "isinstance" \
            and len(first.test.args) == 2:
        return bool(set(_names(first.test.args[1])) & (retry_names | {"TaskPredicate", "CeleryError"})) \
            and contains_raise(first.body)
    return False
