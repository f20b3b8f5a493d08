"""BL008's error: a catch-all that swallows the Retry a retry call raises, after Celery has sent the retry.

The retry call may sit in the `try` itself, or in a helper the `try` calls:
a helper whose retry escapes it (retry_sites.py says which) is followed up
its callers across the audited files, through the modules' facts, a few
calls far, and stops at a task, where the Retry reaches the worker.
"""

from __future__ import annotations

import ast
from pathlib import Path

from budgetlab.audit.callgraph import Project, resolve_task_decorators
from budgetlab.audit.findings import Finding
from budgetlab.audit.pyrecords import Call, FunctionFacts, ModuleFacts
from budgetlab.audit.retry_sites import ModuleReader, short

# How far a helper that raises Retry is followed up its callers.
_CALLERS_DEPTH = 3


def swallowed(readers: dict, sources: dict, tree_of, modules: list[ModuleFacts]) -> list[Finding]:
    """Catch-alls that swallow a Retry: raised in the same function, or by a helper the `try` calls.

    One finding per handler, naming the first retry it swallows.
    """
    found: dict[tuple[str, int], Finding] = {}
    raisers: dict[tuple[str, int, str], str] = {}  # (display, def line, name) -> what raises, for the message
    for reader in readers.values():
        for function in reader.functions.values():
            for site in function.sites:
                if site.kind != "retry":
                    continue
                if site.fate == "swallowed":
                    _swallow_finding(found, reader.display, site.catcher,
                                     f"`{short(site.call.func)}()` at line {site.call.lineno}")
                elif site.fate == "escapes" and not function.is_entry:
                    raisers.setdefault((reader.display, function.node.lineno, function.node.name),
                                       f"`{short(site.call.func)}()` at {Path(reader.display).name}:{site.call.lineno}")
    if raisers:
        _swallowed_in_callers(raisers, found, readers, sources, tree_of, modules)
    return list(found.values())


def _swallowed_in_callers(raisers: dict, found: dict, readers: dict, sources: dict, tree_of, modules) -> None:
    """Follow helpers that raise Retry up their callers, through the modules' facts, a few calls far."""
    project = Project(modules)
    resolve_task_decorators(project)
    facts_of = {(module.display, facts.line, facts.name): facts for module in modules for facts in module.functions}
    frontier = {facts_of[key]: origin for key, origin in raisers.items() if key in facts_of}
    seen = set(frontier)
    for _ in range(_CALLERS_DEPTH):
        names = {facts.name for facts in frontier}
        reached: dict[FunctionFacts, str] = {}
        for module in modules:
            for caller in module.functions:
                for call in caller.calls:
                    if call.target[-1] not in names:
                        continue
                    helper = next((callee for callee in project.callees(caller, call) if callee in frontier), None)
                    if helper is None:
                        continue
                    origin = f"`{helper.name}()` (its {frontier[helper]})"
                    function, (fate, catcher) = _fate_of(caller, call, readers, sources, tree_of)
                    if fate == "swallowed":
                        _swallow_finding(found, module.display, catcher, origin)
                    elif fate == "escapes" and function is not None and not function.is_entry \
                            and not caller.is_task and caller not in seen:
                        reached[caller] = origin
        seen |= set(reached)
        frontier = reached
        if not frontier:
            return


def _fate_of(caller: FunctionFacts, call: Call, readers: dict, sources: dict, tree_of) -> tuple:
    """(the caller's Function, the fate its body gives this call), reading the caller's module if not read yet."""
    display = caller.module.display
    reader = readers.get(display)
    if reader is None:
        reader = readers[display] = ModuleReader(display, tree_of(display), sources[display][1])
    function = next((function for node, function in reader.functions.items()
                     if node.lineno == caller.line and node.name == caller.name), None)
    if function is None:
        return None, ("escapes", None)
    return function, function.calls.get((call.line, call.column), ("escapes", None))


def _swallow_finding(found: dict, display: str, catcher: ast.AST, origin: str) -> None:
    if (display, catcher.lineno) in found:
        return
    if type(catcher) is ast.ExceptHandler:
        label = "except:" if catcher.type is None else "except " + ast.unparse(catcher.type)
        end = catcher.type.end_lineno if catcher.type is not None else catcher.lineno
    else:
        label, end = f"with {ast.unparse(catcher.items[0].context_expr)}", catcher.lineno
    found[(display, catcher.lineno)] = Finding(
        display, catcher.lineno, catcher.col_offset + 1, "BL008",
        f"`{label}` swallows the Retry raised by {origin} after the retry was sent: this run goes on and the "
        "retry runs the task again", "error", end or catcher.lineno)
