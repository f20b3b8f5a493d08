"""Resolves calls between the audited modules and works out which functions run in tasks or per item."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

from budgetlab.audit.pyrecords import Call, FunctionFacts, ModuleFacts, Target

# How many dotted suffixes of a module's path are indexed: "services",
# "billing.services", "kontor.billing.services", ... Enough for imports to
# resolve in a tree whose package root is not marked with __init__.py.
_SUFFIX_DEPTH = 6
_REEXPORT_HOPS = 3


class Project:
    """All audited modules, indexed by path and by dotted name."""

    def __init__(self, modules: list[ModuleFacts]) -> None:
        self.modules = modules
        self.by_path: dict[Path, ModuleFacts] = {}
        self.by_name: dict[str, list[ModuleFacts]] = {}
        for module in modules:
            self.by_path[module.path] = module
            parts = list(module.path.with_suffix("").parts)
            if parts and parts[-1] == "__init__":
                parts.pop()
            for depth in range(1, min(_SUFFIX_DEPTH, len(parts)) + 1):
                self.by_name.setdefault(".".join(parts[-depth:]), []).append(module)
        self._resolved: dict[tuple[int, Target], list[FunctionFacts]] = {}
        # Model class name -> the models modules that define it: `apps.get_model("hooks", "HookLog")` names a
        # model that the module using it never imports.
        self.models: dict[str, list[ModuleFacts]] = {}
        for module in modules:
            for name in module.model_classes:
                self.models.setdefault(name, []).append(module)

    # Modules --------------------------------------------------------------

    def module(self, importer: ModuleFacts, name: str, level: int) -> ModuleFacts | None:
        """The audited module an import names, or None when it is outside the audit."""
        if level:
            base = importer.path.parent
            for _ in range(level - 1):
                base = base.parent
            relative = base.joinpath(*name.split(".")) if name else base
            return self.by_path.get(relative.with_suffix(".py")) or self.by_path.get(relative / "__init__.py")
        candidates = self.by_name.get(name)
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        # The same dotted name in two trees (labs/ and solutions/): the nearer one.
        importer_path = str(importer.path)
        return max(candidates, key=lambda module: len(os.path.commonpath([importer_path, str(module.path)])))

    def export(self, module: ModuleFacts, name: str, hops: int = 0) -> list[FunctionFacts]:
        """Functions a module offers under a name, following re-exports a few hops."""
        found = module.top_defs.get(name)
        if found is not None:
            return [found]
        held = module.instances.get(name)
        if held is not None and held[0] == "n" and hops < _REEXPORT_HOPS:
            # `retrying = retryable_task(...)`: calling the instance calls into its class.
            return self.export(module, held[1], hops + 1)
        imported = module.imports.get(name)
        if imported is None or hops >= _REEXPORT_HOPS or imported[0] != "from":
            return []
        _, source, level, attribute = imported
        target = self.module(module, source, level)
        if target is None or target is module:
            return []
        return self.export(target, attribute, hops + 1)

    def method(self, module: ModuleFacts, class_name: str, attribute: str) -> FunctionFacts | None:
        """A method of a class defined in the module or imported into it, or of a model of that name; or None.

        A model reached through the app registry is not imported: it is taken
        from the models module that defines it, the nearest one where several do.
        """
        methods = module.classes.get(class_name)
        if methods is None:
            imported = module.imports.get(class_name)
            if imported is not None and imported[0] == "from":
                target = self.module(module, imported[1], imported[2])
                methods = target.classes.get(imported[3]) if target is not None else None
            elif imported is None and class_name in self.models:
                importer = str(module.path)
                nearest = max(self.models[class_name],
                              key=lambda candidate: len(os.path.commonpath([importer, str(candidate.path)])))
                methods = nearest.classes.get(class_name)
        return methods.get(attribute) if methods else None

    # Calls ----------------------------------------------------------------

    def callees(self, caller: FunctionFacts, call: Call) -> list[FunctionFacts]:
        """Functions in the audited tree a call may reach; empty when unknown."""
        key = (id(caller), call.target)
        cached = self._resolved.get(key)
        if cached is None:
            cached = self._resolve(caller, call.target)
            self._resolved[key] = cached
        return cached

    def _resolve(self, caller: FunctionFacts, target: Target) -> list[FunctionFacts]:
        module = caller.module
        kind = target[0]
        if kind == "n":
            name = target[1]
            scope: FunctionFacts | None = caller
            while scope is not None:
                if name in scope.local_defs:
                    return [scope.local_defs[name]]
                scope = scope.parent
            return self.export(module, name)
        if kind == "s":
            methods = module.classes.get(caller.class_name or "", {})
            found = methods.get(target[1])
            return [found] if found is not None else []
        base, attribute = target[1], target[2]
        head = base[0]
        if head in module.classes and len(base) == 1:
            found = module.classes[head].get(attribute)
            return [found] if found is not None else []
        imported = module.imports.get(head)
        if imported is None:
            # hook_log.retry() where hook_log holds a row of a model class the audit can find.
            model = caller.local_types.get(head) if len(base) == 1 else None
            found = self.method(module, model, attribute) if model else None
            return [found] if found is not None else []
        rest = list(base[1:])
        if imported[0] == "module":
            _, name, level = imported
        else:
            _, source, level, name_attribute = imported
            name = f"{source}.{name_attribute}" if source else name_attribute
        full = ".".join([name, *rest]) if rest else name
        target_module = self.module(module, full, level)
        if target_module is None:
            return []
        return self.export(target_module, attribute)


def closure(
    project: Project, seeds: dict[FunctionFacts, tuple], stop=lambda facts: False, depth: int | None = None
) -> dict[FunctionFacts, tuple]:
    """Every function reachable from the seeds through calls; each keeps its seed's origin.

    Functions for which stop() is true are neither entered nor returned.
    """
    reached = {facts: origin for facts, origin in seeds.items() if not stop(facts)}
    distance = dict.fromkeys(reached, 0)
    queue = deque(reached)
    while queue:
        facts = queue.popleft()
        origin = reached[facts]
        if depth is not None and distance[facts] >= depth:
            continue
        for call in facts.calls:
            for callee in project.callees(facts, call):
                if callee not in reached and not stop(callee):
                    reached[callee] = origin
                    distance[callee] = distance[facts] + 1
                    queue.append(callee)
    return reached


def resolve_task_decorators(project: Project) -> None:
    """Mark functions decorated with a project's own task decorator as tasks.

    A decorator counts when it resolves to a function (or a class) that calls
    app.task(...) or shared_task(...) in its body, as a wrapper does.
    """
    for module in project.modules:
        top = module.functions[0]
        for facts in module.functions:
            if facts.is_task or not facts.decorators:
                continue
            for target in facts.decorators:
                if any(callee.wraps_task for callee in project.callees(facts.parent or top, Call(target, False, 0, 0))):
                    facts.is_task = True
                    module.has_tasks = True
                    if facts.decorator_soft_limit and not facts.soft_limit:
                        facts.soft_limit = "decorator"
                    break


def task_reach(project: Project, depth: int | None = None) -> dict[FunctionFacts, tuple]:
    """Functions that run inside a task, each with the task it runs in: (task,).

    With depth, only functions at most that many calls away from a task.
    """
    resolve_task_decorators(project)
    seeds = {
        facts: (facts,)
        for module in project.modules
        if module.has_tasks
        for facts in module.functions
        if facts.is_task
    }
    return closure(project, seeds, depth=depth)


def per_item(project: Project, callers, stop=lambda facts: False) -> dict[FunctionFacts, tuple]:
    """Functions called from inside a loop of one of the callers, and what they call in turn.

    Each maps to (caller, call) of the loop that makes it per-item work.
    """
    seeds: dict[FunctionFacts, tuple] = {}
    for caller in callers:
        for call in caller.calls:
            if not call.in_loop:
                continue
            for callee in project.callees(caller, call):
                if callee is not caller:
                    seeds.setdefault(callee, (caller, call))
    return closure(project, seeds, stop)
