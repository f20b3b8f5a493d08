"""Reads what a module's Celery tasks declare (decorator keywords, Task class attributes) and the numbers in them.

Nothing is imported or run. A task's options are the keywords of its task
decorator, with `**NAME` expanded where NAME is a dict the module spells out
at its top level; under them, the keywords of a module-level alias it is
decorated with (`retrying = shared_task(autoretry_for=...)`, then
`@retrying`); under those, the attributes of its `base=` class and of that
class's bases, where the module defines them. A class deriving from `Task`
declares its options as class attributes.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass

from budgetlab.audit.astshapes import FUNCTIONS, dotted, is_task_decorator, terminal_name

_ARITHMETIC = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub, ast.Div: operator.truediv,
               ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
# Far above any budget or delay: a power past it reads as unknown, not as an overflow.
_LARGEST = 1e12
_DEPTH = 8


def module_constants(tree: ast.Module) -> dict[str, float]:
    """Names the module binds at its top level to a number the audit can read (`TWO_HOURS = 2 * 60 * 60`)."""
    constants: dict[str, float] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = number(node.value, constants)
            if value is not None:
                constants[node.targets[0].id] = value
    return constants


def number(node: ast.expr, constants: dict, depth: int = 0) -> float | None:
    """The value of a number, a name bound to one at module level (constants), arithmetic, max() or min(); or None."""
    if depth > _DEPTH:
        return None
    kind = type(node)
    if kind is ast.Constant:
        value = node.value
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind is ast.Name:
        return constants.get(node.id)
    if kind is ast.UnaryOp and type(node.op) is ast.USub:
        value = number(node.operand, constants, depth + 1)
        return None if value is None else -value
    if kind is ast.BinOp and type(node.op) in _ARITHMETIC:
        left, right = number(node.left, constants, depth + 1), number(node.right, constants, depth + 1)
        if left is None or right is None:
            return None
        try:
            value = float(_ARITHMETIC[type(node.op)](left, right))
        except (ZeroDivisionError, OverflowError):
            return None
        return value if abs(value) <= _LARGEST else None
    if kind is ast.Call and type(node.func) is ast.Name and node.func.id in ("max", "min") and node.args \
            and not node.keywords:
        values = [number(argument, constants, depth + 1) for argument in node.args]
        if None not in values:
            return max(values) if node.func.id == "max" else min(values)
    return None


def as_written(seconds: float) -> str:
    """7200 for 7200.0, 0.5 for 0.5: a number of seconds as a person writes it."""
    return str(int(seconds)) if seconds == int(seconds) else f"{seconds:g}"


@dataclass(frozen=True)
class TaskDeclaration:
    """One task a module declares, with the options it is given."""

    #: The function's (or the class's) name: what the rest of the code calls it by.
    name: str
    #: The name the task is registered under: its `name=` option when the module spells it out, else `name`.
    registered: str
    #: The FunctionDef or ClassDef.
    node: ast.AST
    #: Where a finding about the task points: its task decorator, or the class statement.
    anchor: ast.AST
    #: Option name -> its value as written, from the decorator, its alias and its base classes.
    options: dict


def task_declarations(tree: ast.Module, task_decorators: frozenset[str] = frozenset()) -> list[TaskDeclaration]:
    """Every function the module decorates as a task, and every Task class that defines `run`."""
    dicts = module_dicts(tree)
    aliases = _decorator_aliases(tree, dicts)
    classes = {node.name: node for node in tree.body if type(node) is ast.ClassDef}
    declared = []
    for node in _definitions(tree):
        if type(node) in FUNCTIONS:
            for decorator in node.decorator_list:
                options = _decorator_options(decorator, dicts, aliases, task_decorators)
                if options is None:
                    continue
                base = options.get("base")
                merged = {**_class_options(classes, terminal_name(base) if base is not None else None), **options}
                declared.append(TaskDeclaration(node.name, _registered(merged, node.name), node, decorator, merged))
                break
        elif type(node) is ast.ClassDef and _is_task_class(node, classes) and any(
                type(item) in FUNCTIONS and item.name == "run" for item in node.body):
            options = _class_options(classes, node.name) if node.name in classes else _attributes(node)
            declared.append(TaskDeclaration(node.name, _registered(options, node.name), node, node, options))
    return declared


def _definitions(tree: ast.Module):
    """Every function and class the module defines, at any depth, reached through statements only.

    Expressions hold no definitions (a lambda declares no task), and they are
    most of a module's nodes: walking past them keeps this cheap on every module.
    """
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if type(node) in FUNCTIONS or type(node) is ast.ClassDef:
            yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            children = getattr(node, name, None)
            if type(children) is list:
                stack.extend(child for child in children if not isinstance(child, ast.expr))


def task_classes(tree: ast.Module) -> set[str]:
    """Names of the classes the module defines that derive from Task, directly or through one of its own."""
    classes = {node.name: node for node in tree.body if type(node) is ast.ClassDef}
    return {name for name, node in classes.items() if _is_task_class(node, classes)}


def keywords(call: ast.Call, dicts: dict[str, ast.Dict]) -> dict:
    """A call's keywords, with `**NAME` expanded where NAME is one of the module's dicts (dicts)."""
    found: dict = {}
    for keyword in call.keywords:
        if keyword.arg is not None:
            found[keyword.arg] = keyword.value
        elif type(keyword.value) is ast.Name and keyword.value.id in dicts:
            found.update(dict_items(dicts[keyword.value.id], dicts))
    return found


def dict_items(node: ast.Dict, dicts: dict[str, ast.Dict], depth: int = 0) -> dict:
    """String keys of a dict display -> their values, with `**NAME` entries expanded a few levels."""
    items: dict = {}
    for key, value in zip(node.keys, node.values):
        if key is None:
            if type(value) is ast.Name and value.id in dicts and depth < _DEPTH:
                items.update(dict_items(dicts[value.id], dicts, depth + 1))
        elif type(key) is ast.Constant and isinstance(key.value, str):
            items[key.value] = value
    return items


def module_dicts(tree: ast.Module) -> dict[str, ast.Dict]:
    """Names the module binds at its top level to a dict display (`_RETRY = {"max_retries": 5}`)."""
    return {node.targets[0].id: node.value for node in tree.body
            if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name
            and type(node.value) is ast.Dict}


def _decorator_aliases(tree: ast.Module, dicts: dict) -> dict[str, dict]:
    """`retrying = shared_task(autoretry_for=...)` at top level: name -> the task decorator's keywords."""
    aliases = {}
    for node in tree.body:
        if type(node) is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name \
                and type(node.value) is ast.Call:
            name = dotted(node.value.func)
            if name and is_task_decorator(name):
                aliases[node.targets[0].id] = keywords(node.value, dicts)
    return aliases


def _decorator_options(decorator: ast.expr, dicts: dict, aliases: dict, task_decorators: frozenset) -> dict | None:
    """The options a task decorator gives, or None when the decorator makes no task."""
    call = decorator if type(decorator) is ast.Call else None
    name = dotted(call.func if call is not None else decorator)
    if not name:
        return None
    given = keywords(call, dicts) if call is not None else {}
    if is_task_decorator(name) or name[-1] in task_decorators:
        return given
    if len(name) == 1 and name[0] in aliases:
        return {**aliases[name[0]], **given}
    return None


def _is_task_class(node: ast.ClassDef, classes: dict, depth: int = 0) -> bool:
    for base in node.bases:
        name = terminal_name(base)
        if name == "Task":
            return True
        if name in classes and classes[name] is not node and depth < _DEPTH and \
                _is_task_class(classes[name], classes, depth + 1):
            return True
    return False


def _class_options(classes: dict, name: str | None, depth: int = 0) -> dict:
    """A module's class attributes, under those of its bases the module defines too."""
    node = classes.get(name) if name else None
    if node is None or depth > _DEPTH:
        return {}
    inherited: dict = {}
    for base in reversed(node.bases):
        inherited.update(_class_options(classes, terminal_name(base), depth + 1))
    return {**inherited, **_attributes(node)}


def _attributes(node: ast.ClassDef) -> dict:
    return {target.id: statement.value for statement in node.body if type(statement) is ast.Assign
            for target in statement.targets if type(target) is ast.Name}


def _registered(options: dict, name: str) -> str:
    value = options.get("name")
    return value.value if type(value) is ast.Constant and isinstance(value.value, str) else name
