"""Which models hold reference data when the project names none (BL004 with no `reference-models`).

A reference table is one the application reads and never writes: its rows
come from a data migration, a seed or load script, or the admin. So a model
counts when the audited tree defines it (in a models module), a data
migration or seed script writes it, and no application code writes it:
no manager write (`.create()`, `.update()`, `.bulk_create()`...), no
construction (`Currency(...)`), no `.save()`/`.delete()` on a row of it, no
form, serializer or view bound to it. Tests, migrations, seed scripts and
the admin are not application code here. A model with no data migration or
seed script behind it is never inferred, however rarely it is written: a
write the audit cannot see (a row whose class it does not know) must not
make a table of user data look like reference data. And a migration only
seeds a model when it spells the rows out (`Currency.objects.create(code="EUR")`,
`bulk_create([Currency(code="EUR"), ...])`): one that copies or converts rows
from other tables is moving user data.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: Lookups Django answers from a cache of its own after the first call: never a query per item.
CACHED_LOOKUPS = frozenset({"get_for_model", "get_for_models", "get_for_id", "get_current", "clear_cache"})
_SEED_WORDS = ("seed", "populate", "load_", "loaddata", "fixture", "bootstrap")


def module_role(path: Path) -> str:
    """"test", "migration", "seed", "admin" or "app": what a module's writes say about a model."""
    parts = [part.lower() for part in path.parts]
    name = parts[-1] if parts else ""
    if any(part in ("tests", "test", "testing") for part in parts[:-1]) or name.startswith("test_") \
            or name.endswith(("_tests.py", "_test.py")) or name in ("tests.py", "conftest.py", "factories.py"):
        return "test"
    if "migrations" in parts[:-1]:
        return "migration"
    stem = name.removesuffix(".py")
    if any(word in stem for word in _SEED_WORDS) or ("commands" in parts[:-1] and any(
            word in stem for word in ("init", "create", "setup", "import"))):
        return "seed"
    if stem == "admin" or "admin" in parts[:-1]:
        return "admin"
    return "app"


def is_models_module(path: Path) -> bool:
    """models.py, or a module of a models/ package: where Django models are defined."""
    return path.name == "models.py" or path.parent.name == "models"


def inferred_reference_models(modules) -> frozenset[str]:
    """Models defined in the tree that a data migration or seed script writes and application code never writes."""
    defined: set[str] = set()
    seeded: set[str] = set()
    written: set[str] = set()
    for module in modules:
        defined |= module.model_classes
        role = module.role
        if role in ("migration", "seed"):
            seeded |= module.model_seeds
        elif role == "app":
            written |= module.model_writes
    return frozenset((defined & seeded) - written)


def literal_rows(call: ast.Call) -> bool:
    """True for a write whose arguments are all literals: constants, or lists and calls made of constants."""
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    return bool(arguments) and all(_literal(argument) for argument in arguments)


def _literal(node: ast.AST) -> bool:
    kind = type(node)
    if kind is ast.Constant:
        return True
    if kind in (ast.List, ast.Tuple, ast.Set):
        return all(_literal(element) for element in node.elts)
    if kind is ast.Dict:
        return all(key is None or _literal(key) for key in node.keys) and all(_literal(v) for v in node.values)
    if kind is ast.Call:  # Currency(code="EUR") inside a bulk_create list, Decimal("1.08")
        return all(_literal(argument) for argument in [*node.args, *(keyword.value for keyword in node.keywords)])
    if kind is ast.UnaryOp:
        return _literal(node.operand)
    return False
