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
# The base class of every error of one kind of input and output: the standard library's for the
# operating system (OSError and its old names) and for mail, Django's and DB-API's for the
# database, and those of the HTTP, model and Redis clients. A handler for one of them takes every
# failure of that work, the way a catch-all takes every failure.
IO_FAMILIES = frozenset({"OSError", "IOError", "EnvironmentError", "SMTPException", "DatabaseError",
                         "RequestException", "OpenAIError", "APIError", "RedisError"})
ISOLATING = CATCH_ALL | IO_FAMILIES
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
        "warn", "error", "exception", "critical", "log", "incr", "write", "writerow", "writerows",
        "writelines", "flush", "appendleft", "pop", "discard", "insert", "sort",
    }
)
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
# Calls that only put a message on the broker: each row then runs in a task of
# its own, so a loop of them has nothing to isolate.
ENQUEUE_ATTRIBUTES = frozenset({"delay", "apply_async", "send_task", "s", "si", "signature", "on_commit"})
ENQUEUE_NAMES = frozenset({"group", "chain", "chord", "signature", "on_commit"})
# Queryset and model methods that write; a loop that only gathers rows for
# one of the bulk ones after it writes once, not per row.
WRITE_METHODS = frozenset(
    {
        "save", "delete", "create", "update", "get_or_create", "update_or_create",
        "bulk_create", "bulk_update", "add", "remove", "set", "clear",
    }
)
BULK_WRITES = frozenset({"bulk_create", "bulk_update"})
# Writes on a relation or queryset (`doc.tags.add(tag)`, `qs.filter(...).update()`),
# but plain collection methods on a name or an item (`seen.add(pk)`, `by_id[k].add(v)`).
AMBIGUOUS_WRITES = frozenset({"add", "update", "set", "clear", "remove"})


def is_write(call: ast.Call) -> bool:
    """True for a call that writes rows: .save(), .delete(), a manager's .create(), a relation's .add()..."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr not in WRITE_METHODS:
        return False
    return func.attr not in AMBIGUOUS_WRITES or type(func.value) in (ast.Attribute, ast.Call)


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


def isolates(handler: ast.ExceptHandler) -> bool:
    """True for a handler that keeps one item's failure from stopping the rest: it catches its failures and goes on.

    It catches every error (`except Exception`, `except BaseException`, a bare
    `except:`, a tuple holding one of them) or the whole family of errors of
    the input and output a row's work does (IO_FAMILIES: `except OSError`,
    `except RequestException`), and has no `raise` among its own statements.
    A handler for one failure (`except Card.DoesNotExist:`, `except KeyError:`)
    lets every other one stop the loop, and the poisoned row is most often
    one of those others; a handler that re-raises stops it too.
    """
    kind = handler.type
    if kind is not None:
        elements = kind.elts if type(kind) is ast.Tuple else (kind,)
        if not any(terminal_name(element) in ISOLATING for element in elements):
            return False
    return not any(type(statement) is ast.Raise for statement in handler.body)


def is_log_call(call: ast.Call) -> bool:
    func = call.func
    if type(func) is ast.Attribute and func.attr in LOG_METHODS:
        base = terminal_name(func.value) or ""
        return "log" in base.lower()
    return type(func) is ast.Name and func.id == "print"


def _enqueues(call: ast.Call) -> bool:
    """True for task.delay(...), sig.apply_async(), group(...), transaction.on_commit(...) and their like."""
    func = call.func
    if type(func) is ast.Attribute:
        return func.attr in ENQUEUE_ATTRIBUTES
    return type(func) is ast.Name and func.id in ENQUEUE_NAMES


def _blocks(body: list[ast.stmt], covered: bool = False):
    """(block, covered) for body and every statement list nested in it, nested defs excluded.

    covered is true inside a try statement (its body, handlers, else and
    finally) that has a handler that isolates (see isolates).
    """
    stack = [(body, covered)]
    while stack:
        block, covered = stack.pop()
        yield block, covered
        for node in block:
            kind = type(node)
            if kind in FUNCTIONS or kind is ast.ClassDef:
                continue
            inner = covered or (kind in TRIES and any(map(isolates, node.handlers)))
            for name in ("body", "orelse", "finalbody"):
                nested = getattr(node, name, None)
                if nested:
                    stack.append((nested, inner))
            for handler in getattr(node, "handlers", ()):
                stack.append((handler.body, inner))
            for case in getattr(node, "cases", ()):
                stack.append((case.body, covered))


def loop_work(body: list[ast.stmt], row_names: frozenset[str] = frozenset()) -> tuple[list, list, bool]:
    """(the work, the work no try isolates, writes) of a loop body; each call as (its call target or None, writes).

    Work is a call made for its effect: a call statement whose result is
    dropped (`notification.send()`, `apply(row)`), or a model or queryset write
    anywhere (`.save()`, `.delete()`, `Model.objects.create(...)`). Collection
    plumbing, logging and enqueueing (`.delay()`) are not work, and neither is
    a loop that only computes values (`text += describe(row)`): a failure there
    fails the one result being built, which is what its caller expects. A
    block that ends in `break` finds one row and acts on it once: not a sweep.
    With row_names (the loop's target names), a call that names none of them
    (`self.save()` on a job's own counter) is not work either: whatever makes
    it fail does not depend on the row, so isolating rows would not save the rest.
    Where the body holds a try statement with a handler that isolates, that
    try is taken as the row's isolation and only a write outside it is left
    bare: a call outside it may be logging or set-up the audit cannot tell
    from work, a write is the row's effect.
    """
    work = []
    bare = []
    writes = False
    isolating = False
    for block, covered in _blocks(body):
        if block and type(block[-1]) is ast.Break:
            continue
        isolating = isolating or covered
        found = bare if not covered else work
        for statement in block:
            kind = type(statement)
            if kind in FUNCTIONS or kind is ast.ClassDef:
                continue
            value = statement.value if kind is ast.Expr else None
            if type(value) is ast.Await:
                value = value.value
            if type(value) is ast.Call and effect_call(value) and not is_row_write(value) \
                    and _names_row(value, row_names):
                found.append((call_target(value.func), False))
            for node in _own_nodes(statement):
                if type(node) is ast.Call and is_row_write(node) and _names_row(node, row_names):
                    found.append((call_target(node.func), True))
                    writes = True
    if isolating:
        bare = [item for item in bare if item[1]]
    return work + bare, bare, writes


def _names_row(call: ast.Call, row_names: frozenset[str]) -> bool:
    """True when the call mentions a name the loop binds per row, or when no names are given."""
    return not row_names or any(type(node) is ast.Name and node.id in row_names for node in ast.walk(call))


def is_row_write(call: ast.Call) -> bool:
    """A write that happens here, not in a task it queues: `row.save()`, not `transaction.on_commit(...)`."""
    return is_write(call) and not _enqueues(call)


def effect_call(call: ast.Call) -> bool:
    """True for a call statement that is neither plumbing, logging nor enqueueing."""
    func = call.func
    if _enqueues(call):
        return False
    if type(func) is ast.Name:
        return func.id not in TRIVIAL_NAMES
    if type(func) is ast.Attribute:
        return func.attr not in TRIVIAL_ATTRIBUTES or is_write(call)
    return True


def _own_nodes(statement: ast.stmt):
    """Nodes of a statement's own expressions, not of the blocks nested in it or of lambdas."""
    stack = [child for child in ast.iter_child_nodes(statement) if not isinstance(child, ast.stmt)]
    while stack:
        node = stack.pop()
        if type(node) is ast.Lambda or isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


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


def manager_access(node: ast.AST) -> tuple[ast.Attribute | None, list[str]]:
    """The `Model.objects` attribute a chain starts from, and the methods called on it, outermost first.

    `Category.objects.filter(x=1).first()` gives (Category.objects, ["first", "filter"]);
    a chain that does not go through a manager gives (None, [...]).
    """
    methods: list[str] = []
    while True:
        kind = type(node)
        if kind is ast.Call:
            node = node.func
        elif kind is ast.Subscript:
            node = node.value
        elif kind is ast.Attribute:
            if node.attr in MANAGERS:
                return node, methods
            methods.append(node.attr)
            node = node.value
        else:
            return None, methods


def is_transaction(node: ast.AST) -> bool:
    """True for transaction.atomic(...), atomic(), or a psycopg conn.transaction()."""
    if type(node) is ast.Call:
        node = node.func
    name = terminal_name(node)
    return name == "atomic" or (name == "transaction" and type(node) is ast.Attribute)


def get_model_name(value: ast.AST | None) -> str | None:
    """"Invoice" for `apps.get_model("books", "Invoice")` or `apps.get_model("books.Invoice")`, else None."""
    if type(value) is not ast.Call or type(value.func) is not ast.Attribute or value.func.attr != "get_model":
        return None
    strings = [arg.value for arg in value.args if type(arg) is ast.Constant and type(arg.value) is str]
    if len(strings) == 2:
        return strings[1]
    if len(strings) == 1 and "." in strings[0]:
        return strings[0].rsplit(".", 1)[1]
    return None


def returns_queryset(function: ast.AST) -> bool:
    """True when a function returns a queryset: `return Model.objects.filter(...)`, or a name it bound to one."""
    names: set[str] = set()
    returned = False
    for statement in statements_in(function.body):
        kind = type(statement)
        if kind is ast.Assign and type(statement.value) is not ast.Constant:
            if is_queryset(statement.value, names):
                names.update(t.id for t in statement.targets if type(t) is ast.Name)
        elif kind is ast.Return and statement.value is not None:
            if not is_queryset(statement.value, names):
                return False
            returned = True
    return returned


def queryset_helpers(tree: ast.Module) -> frozenset[str]:
    """Names of the module's functions and methods that return a queryset."""
    found = set()
    for node in tree.body:
        members = node.body if type(node) is ast.ClassDef else [node]
        for member in members:
            if type(member) in FUNCTIONS and returns_queryset(member):
                found.add(member.name)
    return frozenset(found)
