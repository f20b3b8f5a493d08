"""One pass over a Python module's AST that records the facts the Python rules need.

The pass never imports or runs the module. It notes, per function: the calls
it makes (and whether each sits inside a loop), catch-all handlers that do
not let SoftTimeLimitExceeded through, loops over querysets without per-row
isolation, queries on reference models, and the order of pg_stat_* reads
inside transactions. The rules then join these facts across modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from budgetlab.audit.astshapes import (
    CACHE_DECORATORS,
    CATCH_ALL,
    COMPREHENSIONS,
    CONTEXTS,
    FUNCTIONS,
    LOOPS,
    MANAGERS,
    QUERYSET_STEPS,
    TRIES,
    call_target,
    BULK_WRITES,
    WRITE_METHODS,
    contains_raise,
    dotted,
    get_model_name,
    effect_call,
    is_row_write,
    isolates,
    queryset_helpers,
    is_queryset,
    is_task_decorator,
    is_transaction,
    loop_work,
    manager_access,
    terminal_name,
)
from budgetlab.audit.pyrecords import (
    Call,
    FunctionFacts,
    Handler,
    ModuleFacts,
    QuerysetLoop,
    ReferenceQuery,
)
from budgetlab.audit.reference_data import CACHED_LOOKUPS, is_models_module, literal_rows, module_role
from budgetlab.audit.soft_limits import NAMES as SOFT_NAMES
from budgetlab.audit.soft_limits import hard_setting, seconds, setting
from budgetlab.audit.task_options import module_constants, number

PG_NAME = re.compile(r"pg_stat\w*")
PG_NOT_READS = frozenset({"pg_stat_clear_snapshot", "pg_stat_force_next_flush"})
SEGMENT_LIMIT = 256
# Manager steps that return one row: a name bound to one holds an instance of the model.
ROW_STEPS = frozenset({"get", "first", "last", "create", "earliest", "latest"})


class _Collector:
    """Walks one module once; see the module docstring for what it records."""

    def __init__(
        self, module: ModuleFacts, reference_models: frozenset[str], source: bytes, task_decorators: frozenset[str]
    ) -> None:
        self.module = module
        self.task_decorators = task_decorators
        self.open_queryset_loops = 0
        self.handled_managers: set[int] = set()
        self.reference_models = reference_models if any(m.encode() in source for m in reference_models) else frozenset()
        # No configured list: every read-only manager query is recorded, and BL004 keeps those on inferred models.
        module.infer_references = self.infer = not reference_models and b"objects" in source
        module.role = module_role(module.path)
        self.models_module = is_models_module(module.path)
        self.class_bases_stack: list[list[str]] = []
        self.loops: list[ast.AST] = []  # the enclosing loops of this function, whose names are bound per iteration
        self.pg = b"pg_stat" in source
        module.mentions_pg_stat = self.pg
        self.top = FunctionFacts("<module>", "<module>", 1, module)
        module.functions.append(self.top)
        self.function = self.top
        self.loop_depth = 0
        # Local names bound to a queryset -> the model whose rows it yields, where known.
        self.queryset_names: dict[str, str | None] = {}
        # Those of them bound to one row's relation (`lines = invoice.lines.all()`), not a queryset of their own.
        self.relation_names: set[str] = set()
        # The `try` statements whose body is being walked, innermost last: (first handler's label, its line).
        self.tries: list[tuple[str, int]] = []
        # How many try statements with a handler that isolates enclose the statement being walked.
        self.covering = 0
        self.pg_names: dict[str, str] = {}
        self.stle_names = {"SoftTimeLimitExceeded"}
        self.active: list[list[tuple]] = [self.top.events] if self.pg else []
        self.pending: list[tuple] = []
        self.class_methods: dict[str, FunctionFacts] | None = None
        self.class_name: str | None = None
        self.task_class = False
        self.constants: dict[str, float] = {}

    # Statements -----------------------------------------------------------

    def body(self, statements: list[ast.stmt]) -> None:
        for statement in statements:
            self.statement(statement)

    def statement(self, node: ast.stmt) -> None:
        kind = type(node)
        if kind in FUNCTIONS:
            self.function_def(node)
            return
        if kind is ast.ClassDef:
            self.class_def(node)
            return
        in_loop = self.loop_depth > 0
        in_class_body, self.class_methods = self.class_methods, None
        try:
            if kind in LOOPS:
                self.expr(node.iter, in_loop)
                recorded = self.queryset_loop(node)
                for name in ast.walk(node.target):  # the loop rebinds its target names
                    if type(name) is ast.Name:
                        self.queryset_names.pop(name.id, None)
                        self.function.local_types.pop(name.id, None)
                model = self.model_of(node.iter)
                if model and type(node.target) is ast.Name:
                    self.function.local_types[node.target.id] = model
                self.open_queryset_loops += recorded
                self.loops.append(node)
                self.loop_body(node.body)
                self.loops.pop()
                self.open_queryset_loops -= recorded
                self.body(node.orelse)
            elif kind is ast.While:
                self.loops.append(node)
                self.loop_body(node.body, node.test)
                self.loops.pop()
                self.body(node.orelse)
            elif kind in TRIES:
                self.try_statement(node, in_loop)
            elif kind is ast.With or kind is ast.AsyncWith:
                self.with_statement(node, in_loop)
            elif kind is ast.If:
                self.expr(node.test, in_loop)
                self.body(node.body)
                self.body(node.orelse)
            elif kind is ast.Match:
                self.expr(node.subject, in_loop)
                for case in node.cases:
                    if case.guard is not None:
                        self.expr(case.guard, in_loop)
                    self.body(case.body)
            elif kind is ast.Assign or kind is ast.AnnAssign:
                value = node.value
                if value is not None:
                    self.expr(value, in_loop)
                targets = node.targets if kind is ast.Assign else [node.target]
                for target in targets:
                    if type(target) is not ast.Name:
                        self.expr(target, in_loop)
                    self.bind(target, value)
            elif kind is ast.Import or kind is ast.ImportFrom:
                self.imports(node)
            else:
                for child in _children(node):
                    self.expr(child, in_loop)
                if kind is ast.Expr:
                    value = node.value
                    if type(value) is ast.Await:
                        value = value.value
                    if type(value) is ast.Call and not self.covering and effect_call(value) \
                            and not is_row_write(value):
                        self.function.work.append((call_target(value.func), False))
        finally:
            self.class_methods = in_class_body

    def loop_body(self, statements: list[ast.stmt], test: ast.expr | None = None) -> None:
        # A loop body runs more than once: its pg events are recorded twice,
        # so a single read inside a loop in a transaction shows up as two.
        marks = [(events, len(events)) for events in self.active]
        self.loop_depth += 1
        if test is not None:
            self.expr(test, True)
        self.body(statements)
        self.loop_depth -= 1
        for events, start in marks:
            segment = events[start:]
            if segment and len(segment) <= SEGMENT_LIMIT:
                events.extend(segment)

    def try_statement(self, node, in_loop: bool) -> None:
        covering = any(isolates(handler) for handler in node.handlers)
        if covering:
            # Work anywhere in this statement is isolated; only work outside such statements is noted.
            self.function.isolating_try = True
            self.covering += 1
        if node.handlers:
            first = node.handlers[0]
            self.tries.append((self.handler_label(first), first.lineno))
            self.body(node.body)
            self.tries.pop()
        else:
            self.body(node.body)
        time_limit_let_through = False
        for handler in node.handlers:
            if handler.type is not None:
                self.expr(handler.type, in_loop)
            names = self.exception_names(handler.type)
            catches_soft_limit = bool(names & self.stle_names)
            raises = contains_raise(handler.body)
            catch_all = handler.type is None or bool(names & CATCH_ALL)
            if catch_all and not (
                time_limit_let_through
                or (catches_soft_limit and raises)
                or any(type(statement) is ast.Raise for statement in handler.body)
                or self.isinstance_guard(handler)
            ):
                end = handler.type.end_lineno if handler.type is not None else handler.lineno
                self.function.handlers.append(
                    Handler(self.handler_label(handler), handler.lineno, handler.col_offset + 1, in_loop, end)
                )
            if catches_soft_limit and raises:
                time_limit_let_through = True
            self.body(handler.body)
        self.body(node.orelse)
        self.body(node.finalbody)
        if covering:
            self.covering -= 1

    def exception_names(self, node: ast.expr | None) -> set[str]:
        if node is None:
            return set()
        elements = node.elts if type(node) is ast.Tuple else [node]
        return {name for name in map(terminal_name, elements) if name}

    def handler_label(self, handler: ast.ExceptHandler) -> str:
        if handler.type is None:
            return "except:"
        return "except " + ast.unparse(handler.type)

    def isinstance_guard(self, handler: ast.ExceptHandler) -> bool:
        """True when the handler starts with `if isinstance(exc, SoftTimeLimitExceeded): ... raise`."""
        if not handler.body or type(handler.body[0]) is not ast.If:
            return False
        test = handler.body[0].test
        if not (
            type(test) is ast.Call
            and type(test.func) is ast.Name
            and test.func.id == "isinstance"
            and len(test.args) == 2
        ):
            return False
        return bool(self.exception_names(test.args[1]) & self.stle_names) and contains_raise(handler.body[0].body)

    def with_statement(self, node, in_loop: bool) -> None:
        scope = False
        for item in node.items:
            self.expr(item.context_expr, in_loop)
            if item.optional_vars is not None:
                self.expr(item.optional_vars, in_loop)
            if is_transaction(item.context_expr):
                scope = True
        if not scope:
            self.body(node.body)
            return
        events: list[tuple] = []
        self.function.scopes.append((node.lineno, events))
        self.active.append(events)
        self.body(node.body)
        self.active.pop()

    def queryset_loop(self, node) -> int:
        """Record a loop over a queryset that does unisolated work; 1 when recorded, else 0.

        A loop inside one already recorded is part of the same nest: the
        outer loop's finding covers it.
        """
        if self.open_queryset_loops or not self.is_queryset(node.iter):
            return 0
        # Names bound per row: the loop's target, whatever its body binds, and what enclosing loops bind.
        rows = _stored(node).union(*map(_stored, self.loops))
        work, bare, writes = loop_work(node.body, rows)
        if not bare:
            return 0  # no work, or all of it inside a try that isolates the row
        end = node.iter.end_lineno or node.lineno
        related = self.model_of(node.iter) is None and not self.names_queryset(node.iter)
        # Names whose rows the loop could be gathering: its own source and lists it appends to.
        gathered = {node.iter.id} if type(node.iter) is ast.Name else set()
        for inner in ast.walk(node):
            if type(inner) is ast.Call and type(inner.func) is ast.Attribute and inner.func.attr in ("append", "extend"):
                if type(inner.func.value) is ast.Name:
                    gathered.add(inner.func.value.id)
        self.function.queryset_loops.append(
            QuerysetLoop(node.lineno, node.col_offset + 1, node, tuple(bare), writes, end, related, frozenset(gathered),
                         self.tries[-1] if self.tries else None)
        )
        return 1

    def is_queryset(self, node: ast.AST) -> bool:
        """A queryset by its chain (astshapes.is_queryset), or the result of a helper of this module that returns one."""
        return is_queryset(node, self.queryset_names) or self.helper_queryset(node)

    def helper_queryset(self, node: ast.AST) -> bool:
        """True for `pending_invoices()` or `self.pending()` where that function returns a queryset."""
        helpers = self.module.queryset_helpers
        if not helpers or type(node) is not ast.Call:
            return False
        func = node.func
        if type(func) is ast.Name:
            return func.id in helpers
        return type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id in ("self", "cls") \
            and func.attr in helpers

    def names_queryset(self, node: ast.AST) -> bool:
        """True when the chain starts from a local name bound to a queryset (not a row's relation), or a helper's."""
        while type(node) in (ast.Call, ast.Attribute, ast.Subscript):
            if self.helper_queryset(node):
                return True
            node = node.func if type(node) is ast.Call else node.value
        return type(node) is ast.Name and node.id in self.queryset_names and node.id not in self.relation_names

    def model_of(self, node: ast.AST) -> str | None:
        """The model class a Model.objects... chain reads (through an `apps.get_model` name too), or None."""
        manager, _ = manager_access(node)
        if manager is None:
            # `invoices.filter(...)` where `invoices = Invoice.objects...`: the model the name's queryset yields.
            while type(node) in (ast.Call, ast.Attribute, ast.Subscript):
                node = node.func if type(node) is ast.Call else node.value
            return self.queryset_names.get(node.id) if type(node) is ast.Name and self.queryset_names else None
        base = manager.value
        if type(base) is ast.Call:
            return get_model_name(base)  # apps.get_model("hooks", "HookLog").objects...
        name = terminal_name(base)
        return self.function.model_aliases.get(name) or self.top.model_aliases.get(name) or name

    def row_model(self, value: ast.AST) -> str | None:
        """The model of `Model.objects.get(...)`-like values, which hold one row."""
        if type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in ROW_STEPS:
            return self.model_of(value)
        return None

    def bind(self, target: ast.expr, value: ast.expr | None) -> None:
        if type(target) is ast.Name:
            name = target.id
            model = self.row_model(value) if value is not None else None
            alias = get_model_name(value)
            if alias:
                self.function.model_aliases[name] = alias
            elif model is None and type(value) is ast.Call:
                # `processor = Processor()`: its methods resolve like a row's.
                cls = terminal_name(value.func)
                if cls and cls[:1].isupper():
                    model = cls
                # `retrying = retryable_task(max_retries=3)`: a decorator made by calling a class of the project.
                held = call_target(value.func) if self.function is self.top else None
                if held is not None:
                    self.module.instances[name] = held
            if model:
                self.function.local_types[name] = model
            else:
                self.function.local_types.pop(name, None)
            if value is not None and self.is_queryset(value):
                model = self.model_of(value)
                if model is None and not self.names_queryset(value) and _relation(value):
                    self.relation_names.add(name)
                else:
                    self.relation_names.discard(name)
                self.queryset_names[name] = model
            else:
                self.queryset_names.pop(name, None)
            if self.pg and value is not None:
                text = self.pg_text(value)
                if text:
                    self.pg_names[name] = text
        elif type(target) is ast.Attribute and target.attr == "autocommit":
            if type(value) is ast.Constant and value.value is True:
                self.function.autocommit = True

    def pg_text(self, node: ast.expr) -> str:
        """The pg_stat SQL held by an assigned value (literal, f-string, concatenation), or ""."""
        parts = [
            child.value
            for child in ast.walk(node)
            if type(child) is ast.Constant and type(child.value) is str and "pg_stat" in child.value
        ]
        return " ".join(parts)

    def limits(self, given: list, facts: FunctionFacts) -> None:
        """Note the soft_time_limit and time_limit that decorator keywords or class attributes give a task.

        A value of None sets no limit; one the audit cannot read is kept as
        None seconds: the limit is there, its number unknown.
        """
        for item in given:
            if type(item) is ast.keyword:
                names, value = [item.arg], item.value
            else:
                names, value = [target.id for target in item.targets if type(target) is ast.Name], item.value
            for name in names:
                kind = "soft" if name == "soft_time_limit" else "hard" if name == "time_limit" else None
                if kind and not (type(value) is ast.Constant and value.value is None):
                    facts.limits[kind] = number(value, self.constants)

    def imports(self, node) -> None:
        table = self.module.imports
        if type(node) is ast.Import:
            for alias in node.names:
                if alias.asname:
                    table[alias.asname] = ("module", alias.name, 0)
                else:
                    head = alias.name.split(".", 1)[0]
                    table[head] = ("module", head, 0)
            return
        for alias in node.names:
            if alias.name == "*":
                continue
            local = alias.asname or alias.name
            table[local] = ("from", node.module or "", node.level, alias.name)
            if alias.name == "SoftTimeLimitExceeded":
                self.stle_names.add(local)

    # Definitions ----------------------------------------------------------

    def function_def(self, node) -> None:
        in_loop = self.loop_depth > 0
        for decorator in node.decorator_list:
            self.expr(decorator, in_loop)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.expr(default, in_loop)
        parent = self.function
        qualname = node.name if parent is self.top else f"{parent.qualname}.{node.name}"
        if self.class_methods is not None:
            qualname = f"{self.class_name}.{node.name}"
        facts = FunctionFacts(
            node.name, qualname, node.lineno, self.module, parent,
            class_name=self.class_name if self.class_methods is not None else parent.class_name,
        )
        for decorator in node.decorator_list:
            called = decorator.func if type(decorator) is ast.Call else decorator
            name = dotted(called)
            if not name:
                continue
            last = name[-1]
            if is_task_decorator(name) or last in self.task_decorators:
                facts.is_task = True
                if type(decorator) is ast.Call:
                    self.limits(decorator.keywords, facts)
                    if "soft" in facts.limits:
                        facts.soft_limit = "decorator"
            elif last in CACHE_DECORATORS:
                facts.is_cached = True
            elif last == "atomic":
                facts.is_atomic = True
            else:
                target = call_target(called)
                if target is not None:
                    facts.decorators.append(target)
                    if type(decorator) is ast.Call:
                        self.limits(decorator.keywords, facts)
                        facts.decorator_soft_limit = any(
                            keyword.arg == "soft_time_limit" for keyword in decorator.keywords)
        for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            annotation = argument.annotation
            if type(annotation) is ast.Constant and type(annotation.value) is str:
                facts.local_types[argument.arg] = annotation.value.rsplit(".", 1)[-1]
            elif annotation is not None:
                model = terminal_name(annotation)
                if model and model[:1].isupper():
                    facts.local_types[argument.arg] = model
        if self.class_methods is not None:
            self.class_methods[node.name] = facts
            if self.task_class and node.name == "run":
                facts.is_task = True
        elif parent is self.top:
            self.module.top_defs[node.name] = facts
        else:
            parent.local_defs[node.name] = facts
        if facts.is_task:
            self.module.has_tasks = True
        self.module.functions.append(facts)

        saved = (self.function, self.loop_depth, self.queryset_names, self.active, self.pending, self.class_methods,
                 self.tries, self.relation_names)
        self.function = facts
        self.loop_depth = 0
        self.queryset_names = {}
        self.relation_names = set()
        self.tries = []
        saved_covering, self.covering = self.covering, 0
        # Events are kept where pg_stat is mentioned, and for @atomic functions,
        # whose whole body is one transaction that may call readers elsewhere.
        self.active = [facts.events] if self.pg or facts.is_atomic else []
        self.pending = []
        self.class_methods = None
        saved_open, self.open_queryset_loops = self.open_queryset_loops, 0
        saved_loops, self.loops = self.loops, []
        self.body(node.body)
        self.open_queryset_loops = saved_open
        self.loops = saved_loops
        self.covering = saved_covering
        (self.function, self.loop_depth, self.queryset_names, self.active, self.pending, self.class_methods,
         self.tries, self.relation_names) = saved
        if facts.wraps_task and parent is not self.top:
            parent.wraps_task = True  # a decorator factory: the outer function is what code applies

    def class_def(self, node: ast.ClassDef) -> None:
        in_loop = self.loop_depth > 0
        for child in [*node.decorator_list, *node.bases, *node.keywords]:
            self.expr(child, in_loop)
        methods: dict[str, FunctionFacts] = {}
        if self.function is self.top and self.class_methods is None:
            self.module.classes.setdefault(node.name, methods)
        saved = (self.class_methods, self.class_name, self.task_class)
        self.class_name = node.name
        bases = [name for name in map(terminal_name, node.bases) if name]
        if self.function is self.top:
            self.module.class_bases[node.name] = bases
            if self.models_module and any(base.endswith("Model") for base in bases):
                self.module.model_classes.add(node.name)
        outer = [base for stack in self.class_bases_stack for base in stack] + bases
        if self.infer and not any("Admin" in base or "Inline" in base for base in outer):
            for statement in node.body:
                if type(statement) is ast.Assign and any(
                        type(t) is ast.Name and t.id in ("model", "queryset") for t in statement.targets):
                    # A form, serializer or view bound to a model writes it on behalf of users.
                    model = terminal_name(statement.value) if type(statement.value) in (ast.Name, ast.Attribute) \
                        else self.model_of(statement.value)
                    if model:
                        self.module.model_writes.add(model)
        self.class_bases_stack.append(bases)
        self.task_class = "Task" in bases
        for statement in node.body:
            self.class_methods = methods
            self.statement(statement)
        is_task_class = self.task_class
        self.class_bases_stack.pop()
        self.class_methods, self.class_name, self.task_class = saved
        if is_task_class and "run" in methods:
            run = methods["run"]
            self.limits([statement for statement in node.body if type(statement) is ast.Assign], run)
            if "soft" in run.limits:
                run.soft_limit = "class"
        if self.function is self.top and any(method.wraps_task for method in methods.values()):
            # A class whose instances wrap app.task: applying it as a decorator makes a task.
            self.module.top_defs.setdefault(
                node.name, FunctionFacts(node.name, node.name, node.lineno, self.module, wraps_task=True)
            )

    # Expressions ----------------------------------------------------------

    def expr(self, root: ast.AST, in_loop: bool) -> None:
        """Record calls, reference queries and pg events in one expression."""
        stack = [(root, None, in_loop)]
        pop = stack.pop
        push = stack.append
        references = self.reference_models or self.infer
        pg = self.pg
        while stack:
            node, call, loop = pop()
            kind = type(node)
            if kind is ast.Name:
                if self.pg_names and call is not None and node.id in self.pg_names:
                    self.pg_literal(self.pg_names[node.id], call)
                continue
            if kind is ast.Constant:
                if pg and type(node.value) is str and "pg_stat" in node.value:
                    self.pg_literal(node.value, call)
                continue
            if kind in CONTEXTS:
                continue
            if kind is ast.Call:
                self.call(node, loop)
                if references:
                    self.reference_call(node, loop)
                call = node
            elif kind is ast.Attribute:
                if references and node.attr in MANAGERS and id(node) not in self.handled_managers:
                    model = self.model_of(node)
                    if self.is_reference(model):
                        self.function.reference_queries.append(
                            ReferenceQuery(model, node.lineno, node.col_offset + 1, loop, node.end_lineno or node.lineno)
                        )
            elif kind in COMPREHENSIONS:
                generators = node.generators
                # Only the first iterable is evaluated once; the rest runs per item.
                push((generators[0].iter, call, loop))
                for index, generator in enumerate(generators):
                    if index:
                        push((generator.iter, call, True))
                    for condition in generator.ifs:
                        push((condition, call, True))
                if kind is ast.DictComp:
                    push((node.key, call, True))
                    push((node.value, call, True))
                else:
                    push((node.elt, call, True))
                continue
            elif kind is ast.Lambda:
                continue  # its body runs later, wherever it is called
            fields = _FIELDS.get(kind)
            if fields is None:
                fields = _FIELDS[kind] = _node_fields(kind)
            for name in fields:
                child = getattr(node, name)
                if type(child) is list:
                    for item in child:
                        if item is not None:
                            push((item, call, loop))
                elif child is not None:
                    push((child, call, loop))
        if self.pending:
            if self.active:
                self.pending.sort(key=lambda item: (item[0], item[1]))
                events = [item[2] for item in self.pending]
                for target in self.active:
                    target.extend(events)
            self.pending.clear()

    def reference_call(self, node: ast.Call, in_loop: bool) -> None:
        """Record `Model.objects....(...)` on a reference model once, at its outermost call, if it only reads."""
        current, methods = manager_access(node)
        if current is None or id(current) in self.handled_managers:
            return
        self.handled_managers.add(id(current))
        model = self.model_of(current)
        if WRITE_METHODS.intersection(methods):
            if model:
                self.module.model_writes.add(model)
                if literal_rows(node):
                    self.module.model_seeds.add(model)
            return
        if not self.is_reference(model) or CACHED_LOOKUPS.intersection(methods):
            return  # ContentType.objects.get_for_model(...) and their like are cached by Django itself
        self.function.reference_queries.append(
            ReferenceQuery(model, current.lineno, current.col_offset + 1, in_loop, node.end_lineno or node.lineno)
        )

    def is_reference(self, model: str | None) -> bool:
        """A model whose read-only queries are recorded: a configured one, or any model while inferring."""
        if not model:
            return False
        return model in self.reference_models or (self.infer and model[:1].isupper())

    def note_write(self, node: ast.Call) -> None:
        """Models this call writes: `Currency(...)`, `row.save()` on a row of a known model."""
        func = node.func
        if type(func) is ast.Name and func.id[:1].isupper():
            model = self.top.model_aliases.get(func.id) or self.function.model_aliases.get(func.id) or func.id
            self.module.model_writes.add(model)
            if literal_rows(node):
                self.module.model_seeds.add(model)
        elif type(func) is ast.Attribute and func.attr in ("save", "delete") and type(func.value) is ast.Name:
            model = self.function.local_types.get(func.value.id)
            if model:
                self.module.model_writes.add(model)

    def call(self, node: ast.Call, in_loop: bool) -> None:
        func = node.func
        target = call_target(func)
        line = node.lineno
        facts = self.function
        facts.makes_calls = True
        if is_row_write(node):
            facts.row_work.append((target, True))
            if not self.covering:
                facts.work.append((target, True))
        elif effect_call(node):
            facts.row_work.append((target, False))
        if self.infer:
            self.note_write(node)
        if target is not None:
            self.function.calls.append(Call(target, in_loop, line, node.col_offset + 1))
            if self.active:
                self.pending.append((line, node.col_offset, ("X", target, line, node.col_offset + 1)))
        attribute = func.attr if type(func) is ast.Attribute else (func.id if type(func) is ast.Name else None)
        if attribute is None:
            return
        if attribute in BULK_WRITES and type(func) is ast.Attribute and node.args:
            first = node.args[0]
            if type(first) is ast.Name:
                self.function.bulk_writes.append((line, first.id))
        elif (attribute == "task" or attribute == "shared_task") and is_task_decorator(dotted(func) or ("",)):
            self.function.wraps_task = True
        if attribute in ("commit", "rollback") and self.active:
            self.pending.append((line, node.col_offset, ("C",)))
        for keyword in node.keywords:
            if keyword.arg == "autocommit" and type(keyword.value) is ast.Constant:
                if keyword.value.value is True:
                    self.function.autocommit = True
        if attribute == "set_autocommit" and node.args and type(node.args[0]) is ast.Constant:
            if node.args[0].value is True:
                self.function.autocommit = True
            elif node.args[0].value is False:
                self.function.manual_transaction = True
        elif attribute == "set_isolation_level" and "AUTOCOMMIT" in ast.dump(node):
            self.function.autocommit = True
        elif attribute == "connect" and type(func) is ast.Attribute:
            base = terminal_name(func.value)
            if base in ("psycopg", "psycopg2") and not any(
                keyword.arg == "autocommit" and type(keyword.value) is ast.Constant and keyword.value.value is True
                for keyword in node.keywords
            ):
                self.function.opens_connection = True

    def pg_literal(self, text: str, call: ast.Call | None) -> None:
        if call is None or not self.active:
            return
        names = set(PG_NAME.findall(text))
        position = (call.lineno, call.col_offset)
        if "pg_stat_clear_snapshot" in names:
            self.pending.append((*position, ("C",)))
        if any(name not in PG_NOT_READS and not name.endswith("_reset") and "_reset_" not in name for name in names):
            self.pending.append((*position, ("R", call.lineno, call.col_offset + 1)))


def _relation(node: ast.AST) -> bool:
    """True for a chain that starts from an attribute of a name (`invoice.lines.all()`): one row's relation.

    A chain whose first step off the name is a queryset method
    (`invoices.filter(...)`, on a queryset handed in) is a queryset of its own.
    """
    while type(node) in (ast.Call, ast.Attribute, ast.Subscript):
        if type(node) is ast.Attribute and type(node.value) is ast.Name:
            return node.attr not in QUERYSET_STEPS
        node = node.func if type(node) is ast.Call else node.value
    return False


# Fields that never hold a node the walk needs: names, numbers and strings, and the load/store
# contexts and operators, which are nodes that hold nothing. Skipping them is most of what
# makes the walk cheaper than ast.iter_child_nodes, whose order it keeps.
_LEAF_FIELDS = frozenset({"ctx", "id", "attr", "kind", "arg", "op", "ops", "conversion", "type_comment",
                          "is_async", "level", "module", "asname", "name", "names"})
_FIELDS: dict[type, tuple[str, ...]] = {}


def _node_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold nodes the walk visits, in ast's order."""
    if kind is ast.Constant:
        return ()
    return tuple(name for name in kind._fields if name not in _LEAF_FIELDS)


def _children(node: ast.AST):
    """The child nodes of a statement's own fields, as ast.iter_child_nodes gives them, without leaf fields."""
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = _node_fields(kind)
    for name in fields:
        child = getattr(node, name)
        if type(child) is list:
            yield from (item for item in child if item is not None)
        elif child is not None:
            yield child


def _stored(node: ast.AST) -> frozenset[str]:
    """Names a statement binds anywhere inside it (targets, assignments, inner loops)."""
    return frozenset(name.id for name in ast.walk(node) if type(name) is ast.Name and type(name.ctx) is ast.Store)


def collect(
    tree: ast.Module,
    path: Path,
    display: str,
    reference_models: frozenset[str],
    source: bytes,
    task_decorators: frozenset[str] = frozenset(),
) -> ModuleFacts:
    """Facts of one parsed module."""
    module = ModuleFacts(path, display)
    if b"oft_time_limit" in source or b"OFT_TIME_LIMIT" in source:
        line, value = setting(tree, SOFT_NAMES)
        if line:
            module.soft_limit_setting = line
            module.limit_settings["soft"] = (line, seconds(value, module_constants(tree), tree))
    line, value = hard_setting(tree, source)
    if line:
        module.limit_settings["hard"] = (line, seconds(value, module_constants(tree), tree))
    if b"objects" in source or b"get_queryset" in source:
        module.queryset_helpers = queryset_helpers(tree)
    collector = _Collector(module, reference_models, source, task_decorators)
    # Numbers a task's limits may name (`time_limit=EXPORT_BUDGET`); read only where a limit is written.
    collector.constants = module_constants(tree) if b"time_limit" in source else {}
    collector.body(tree.body)
    for classes_methods in module.classes.values():
        for facts in classes_methods.values():
            if facts.is_task:
                module.has_tasks = True
    return module
