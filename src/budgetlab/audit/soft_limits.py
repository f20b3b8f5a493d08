"""Where Celery's project-wide time limits are set, and which tasks a setting reaches.

Only Celery's own ways of setting it count: a module-level assignment of
`task_soft_time_limit` (or `CELERY_TASK_SOFT_TIME_LIMIT`, or the pre-4.0
`CELERYD_TASK_SOFT_TIME_LIMIT`) in a settings module, `app.conf.X = ...`,
`app.conf["X"] = ...` and `app.conf.update(X=...)`/`app.conf.update({"X": ...})`.
A class attribute of the same name (a REST framework serializer field, a
form field), a dict key in any other dict, or a value that only reads the
setting set nothing, so they are passed over. A value of None or 0, or one
read from the environment with no default, sets no limit either. The hard
limit (`task_time_limit`, `CELERY_TASK_TIME_LIMIT`) is read the same way.
"""

from __future__ import annotations

import ast
from pathlib import Path

NAMES = frozenset({"task_soft_time_limit", "CELERY_TASK_SOFT_TIME_LIMIT", "CELERYD_TASK_SOFT_TIME_LIMIT"})
HARD_NAMES = frozenset({"task_time_limit", "CELERY_TASK_TIME_LIMIT", "CELERYD_TASK_TIME_LIMIT"})
# Files of a Django project package: its settings reach the apps beside the package, not only its own folder.
_PROJECT_PACKAGE_FILES = ("urls.py", "wsgi.py", "asgi.py")


def setting_line(tree: ast.Module, source: bytes) -> int:
    """Line of the first statement that sets a soft limit for every task, or 0."""
    if b"oft_time_limit" not in source and b"OFT_TIME_LIMIT" not in source:
        return 0
    return setting(tree, NAMES)[0]


def hard_setting(tree: ast.Module, source: bytes) -> tuple[int, ast.expr | None]:
    """(line, value) of the first statement that sets a hard limit for every task, or (0, None)."""
    if b"ask_time_limit" not in source and b"ASK_TIME_LIMIT" not in source:
        return 0, None
    return setting(tree, HARD_NAMES)


def setting(tree: ast.Module, names: frozenset[str]) -> tuple[int, ast.expr | None]:
    """(line, value) of the first statement that sets one of the names for every task, or (0, None)."""
    unset = _env_without_default(tree)
    for statement in _module_level(tree.body):
        kind = type(statement)
        if kind is ast.Assign or kind is ast.AnnAssign:
            targets = statement.targets if kind is ast.Assign else [statement.target]
            if any(type(t) is ast.Name and t.id in names for t in targets) and _sets(statement.value, unset):
                return statement.lineno, statement.value
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Assign:
            for target in node.targets:
                if _conf_target(target, names) and _sets(node.value, unset):
                    return node.lineno, node.value
        elif kind is ast.Call and _conf_update(node):
            for keyword in node.keywords:
                if keyword.arg in names and _sets(keyword.value, unset):
                    return node.lineno, keyword.value
            for argument in node.args:
                if type(argument) is ast.Dict:
                    for key, value in zip(argument.keys, argument.values):
                        if type(key) is ast.Constant and key.value in names and _sets(value, unset):
                            return node.lineno, value
    return 0, None


def _module_level(statements: list[ast.stmt]):
    """Statements run at import time: the module body and the blocks of its if/try/with, never defs or classes."""
    for statement in statements:
        yield statement
        kind = type(statement)
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            continue
        for name in ("body", "orelse", "finalbody"):
            nested = getattr(statement, name, None)
            if nested:
                yield from _module_level(nested)
        for handler in getattr(statement, "handlers", ()):
            yield from _module_level(handler.body)


def _has_conf(node: ast.AST) -> bool:
    """True for `app.conf`, `celery_app.conf`, `self.conf`: the Celery app's configuration object."""
    return type(node) is ast.Attribute and node.attr == "conf"


def _conf_target(target: ast.expr, names: frozenset[str]) -> bool:
    if type(target) is ast.Attribute:
        return target.attr in names and _has_conf(target.value)
    if type(target) is ast.Subscript:
        key = target.slice
        return type(key) is ast.Constant and key.value in names and _has_conf(target.value)
    return False


def _conf_update(call: ast.Call) -> bool:
    func = call.func
    return type(func) is ast.Attribute and func.attr in ("update", "setdefault", "add_defaults") and _has_conf(func.value)


def _env_without_default(tree: ast.Module) -> set[str]:
    """Environment names a django-environ `Env(NAME=(type, None))` schema declares with the default None or 0."""
    return {name for name, last in env_schema(tree).items() if type(last) is ast.Constant and last.value in (None, 0)}


def env_schema(tree: ast.Module) -> dict[str, ast.expr]:
    """Environment name -> the default a django-environ `Env(NAME=(type, default))` schema gives it."""
    names = {}
    for node in ast.walk(tree):
        if type(node) is ast.Call and type(node.func) in (ast.Name, ast.Attribute):
            func = node.func
            if not (func.id if type(func) is ast.Name else func.attr).endswith("Env"):  # Env, FileAwareEnv
                continue
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg and type(value) is ast.Tuple and value.elts:
                    names[keyword.arg] = value.elts[-1]
    return names


def seconds(value: ast.expr | None, constants: dict, tree: ast.Module) -> float | None:
    """The seconds a setting's value gives, through an environment read's default; None where unreadable.

    `12 * 60 * 60`, `TWELVE_HOURS`, `env("LIMIT")` with `Env(LIMIT=(int, 43200))`,
    `env.int("LIMIT", default=43200)`, `int(os.environ.get("LIMIT", "43200"))`.
    """
    from budgetlab.audit.task_options import number

    if value is None:
        return None
    found = number(value, constants)
    if found is not None or type(value) is not ast.Call:
        return found
    func = value.func
    name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
    if name in ("int", "float") and len(value.args) == 1:
        return seconds(value.args[0], constants, tree)
    keywords = {keyword.arg: keyword.value for keyword in value.keywords if keyword.arg}
    default = keywords.get("default")
    first = value.args[0] if value.args else None
    if default is None and len(value.args) >= 2:
        default = value.args[1]
    if default is None and type(first) is ast.Constant and type(first.value) is str:
        default = env_schema(tree).get(first.value)
    if type(default) is ast.Constant and type(default.value) is str:
        try:
            return float(default.value)
        except ValueError:
            return None
    return number(default, constants) if default is not None else None


def _sets(value: ast.expr | None, unset: set[str]) -> bool:
    """False for a value that sets no limit: None, 0, or an environment read whose default is None."""
    if value is None:
        return False
    if type(value) is ast.Constant:
        return value.value not in (None, 0, False)
    if type(value) is ast.Call:
        keywords = {keyword.arg: keyword.value for keyword in value.keywords if keyword.arg}
        default = keywords.get("default")
        if default is not None:
            return not (type(default) is ast.Constant and default.value in (None, 0))
        func = value.func
        name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        first = value.args[0] if value.args else None
        if type(first) is ast.Constant and first.value in unset:
            return False  # env("NAME") where the schema gives NAME the default None
        if name in ("get", "getenv") and len(value.args) == 1:
            return False  # os.environ.get("NAME"), os.getenv("NAME"): None while unset
        if len(value.args) >= 2 and type(first) is ast.Constant and type(first.value) is str:
            second = value.args[1]  # env("NAME", None), os.environ.get("NAME", None), config("NAME", 0)
            if type(second) is ast.Constant and second.value in (None, 0, ""):
                return False
    return True


def scope(path: Path, audited: set[Path]) -> Path:
    """The folder whose tasks a settings module at path configures.

    A worker loads one settings module, so its limits reach the tasks of its
    own app: the settings module's folder, or, for a Django project package
    (`proj/settings.py` beside `urls.py`, or `config/settings/base.py`), the
    folder that holds the project package and its apps.
    """
    folder = path.parent
    if folder.name == "settings":
        folder = folder.parent
    if any(folder / name in audited for name in _PROJECT_PACKAGE_FILES):
        folder = folder.parent
    return folder


def applies(scope_folder: Path | None, module_path: Path) -> bool:
    """True when a limit with this scope reaches a task defined at module_path; None reaches everything."""
    return scope_folder is None or scope_folder in module_path.parents
