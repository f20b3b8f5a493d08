"""BL002 to BL005: judges the facts of all audited Python modules together and words the findings."""

from __future__ import annotations

import ast
from pathlib import Path

from budgetlab.audit.callgraph import Project, per_item, task_reach
from budgetlab.audit.findings import Finding
from budgetlab.audit.pyrecords import Call, FunctionFacts, ModuleFacts
from budgetlab.audit.reference_data import inferred_reference_models
from budgetlab.audit.soft_limits import applies, scope

_MAX_DEPTH = 8
# BL003 follows calls from a task at most this far: task -> helper -> helper.
# Further away, whether a loop's failure stops anything depends on callers
# the finding could not name; on real code bases most such findings were wrong.
_SWEEP_DEPTH = 2
# A loop's call counts as isolating the row, or as doing no work a row could fail, when the helper it
# reaches does so itself or hands each piece of its own work to helpers that do, at most this many calls
# down from the loop: loop -> helper -> helper.
_HELPER_DEPTH = 2


def _where(facts: FunctionFacts) -> str:
    return f"`{facts.qualname}`"


def _loop_at(origin: tuple, here: FunctionFacts, named: FunctionFacts | None = None) -> str:
    """"line 40 of `sweep`" for a loop in the same file, "tasks.py:40 in `sweep`" for one elsewhere.

    The function that holds the loop is named, as the task that runs it may be
    a caller further up; not when it is the function the message names already.
    """
    caller, call = origin
    holder = "" if caller is named else f" of {_where(caller)}"
    if caller.module is here.module:
        return f"line {call.line}{holder}"
    return f"{Path(caller.module.display).name}:{call.line}{holder.replace(' of ', ' in ')}"


def check_python(
    modules: list[ModuleFacts], enabled: set[str] | frozenset[str], worker_limits: list[str] = ()
) -> list[Finding]:
    """Findings of the Python rules in enabled, over every module at once.

    worker_limits names the launch-file lines ("path:line") whose worker sets
    --soft-time-limit, so BL002 can say where a task's soft limit comes from.
    """
    project = Project(modules)
    findings: list[Finding] = []
    in_tasks = task_reach(project) if enabled & {"BL002", "BL003"} else {}
    if "BL002" in enabled:
        findings.extend(swallowed_soft_limit(project, in_tasks, _soft_limit_sources(project, worker_limits)))
    if "BL003" in enabled:
        findings.extend(unisolated_queryset_loops(project, task_reach(project, _SWEEP_DEPTH)))
    if "BL004" in enabled:
        findings.extend(reference_queries_per_item(project))
    if "BL005" in enabled:
        findings.extend(frozen_pg_stats(project))
    return findings


# BL002 --------------------------------------------------------------------


def _soft_limit_sources(project: Project, worker_limits) -> list[tuple[Path | None, str]]:
    """Each project-wide soft limit as (the folder whose tasks it reaches, "setting at path:line").

    A settings module reaches the tasks of its own app (soft_limits.scope); a
    worker flag in a launch file beside Python modules reaches those, and one
    in a folder of launch files only (deploy/, docker/) reaches every task.
    """
    audited = set(project.by_path)
    folders = {path.parent for path in audited}
    sources: list[tuple[Path | None, str]] = []
    for module in project.modules:
        if module.soft_limit_setting:
            sources.append((scope(module.path, audited),
                            f"setting at {Path(module.display).name}:{module.soft_limit_setting}"))
    for place in worker_limits:
        folder = Path(place.rpartition(":")[0]).resolve().parent
        sources.append((folder if folder in folders else None, f"worker flag at {Path(place).name}"))
    return sources


def _limit_for(task: FunctionFacts, sources: list[tuple[Path | None, str]]) -> str | None:
    """Where the project-wide soft limit that reaches this task is set, or None."""
    return next((label for folder, label in sources if applies(folder, task.module.path)), None)


def swallowed_soft_limit(project: Project, in_tasks: dict, limit_sources: list) -> list[Finding]:
    """Catch-alls in a task's loops, or anywhere in a helper a task calls per item, where a soft limit applies.

    A task with soft_time_limit in its decorator or class ranks as an error;
    one covered only by a project-wide setting or a worker flag, as a warning.
    Where no soft limit is found at all, SoftTimeLimitExceeded is never raised
    and the catch-all swallows nothing, so nothing is reported.
    """
    if not any(facts.handlers for facts in in_tasks):
        return []
    per_item_in_tasks = per_item(project, list(in_tasks))
    findings = []
    for facts, (task,) in in_tasks.items():
        project_limit = None if task.soft_limit else _limit_for(task, limit_sources)
        if task.soft_limit:
            severity, limit = "error", f"limit: its {task.soft_limit}"
        elif project_limit:
            severity, limit = "warning", f"limit: {project_limit}"
        else:
            continue
        for handler in facts.handlers:
            origin = per_item_in_tasks.get(facts)
            if handler.in_loop:
                place = f"a loop of task {_where(task)}" if facts is task else (
                    f"a loop of {_where(facts)}, run by task {_where(task)}"
                )
            elif origin is not None:
                place = f"{_where(facts)}, run per item by task {_where(task)} (loop at {_loop_at(origin, facts, task)})"
            else:
                continue
            findings.append(
                Finding(
                    facts.module.display,
                    handler.line,
                    handler.column,
                    "BL002",
                    f"`{handler.label}` in {place} swallows SoftTimeLimitExceeded ({limit})",
                    severity,
                    handler.end_line,
                )
            )
    return findings


# BL003 --------------------------------------------------------------------


def unisolated_queryset_loops(project: Project, in_tasks: dict) -> list[Finding]:
    """Loops over querysets in task code that do the work inline, without per-row try/except."""
    findings = []
    for module in project.modules:
        for facts in module.functions:
            if not facts.queryset_loops:
                continue
            task = in_tasks.get(facts)
            sweep = "sweep" in facts.name.lower() and module.has_tasks
            if task is None and not sweep:
                continue
            for loop in facts.queryset_loops:
                if all(not write and _handled(project, facts, target, 1) for target, write in loop.work):
                    continue  # every piece of the row's work goes to a helper that isolates it or cannot fail on it
                if not loop.writes and any(
                    line > loop.line and name in loop.gathered for line, name in facts.bulk_writes
                ):
                    continue  # gathers rows for one bulk write after the loop: nothing is done per row
                if loop.related and not facts.is_task:
                    continue  # a helper walking one row's relation works on that one item
                where = (
                    f"task {_where(facts)}" if facts.is_task
                    else f"{_where(facts)}, reached from task {_where(task[0])}" if task
                    else f"sweep {_where(facts)}"
                )
                around = ""
                if loop.enclosing_try:
                    label, line = loop.enclosing_try
                    around = f" (the `{label}` at line {line} is around the whole loop: it catches that row's " \
                             "error after the sweep has stopped)"
                findings.append(
                    Finding(
                        module.display,
                        loop.line,
                        loop.column,
                        "BL003",
                        f"`for {_short(loop.loop.target)} in {_short(loop.loop.iter)}` in {where}: "
                        f"one row that raises stops the rows after it{around}",
                        end_line=loop.end_line,
                    )
                )
    return findings


def _handled(project: Project, caller: FunctionFacts, target, depth: int) -> bool:
    """True when a call reaches a helper that isolates the item or does no work a row could fail.

    A helper found in the audited files isolates when it holds a try whose
    handler catches every error and goes on (astshapes.isolates), and does no
    row work when its calls are all plumbing, logging, CSV or log writes or
    queueing; or, at most _HELPER_DEPTH calls down from the loop, when each
    piece of its own work is a call to a helper that does. A helper the audit
    cannot find counts as work done inline.
    """
    if target is None:
        return False
    return any(_isolates(project, callee, depth) or _no_work(project, callee, depth)
               for callee in project.callees(caller, Call(target, True, 0, 0)))


def _isolates(project: Project, facts: FunctionFacts, depth: int) -> bool:
    """A helper isolates with a try that isolates and no write outside one, or by handing its work to helpers that do.

    The second only closer than _HELPER_DEPTH calls to the loop (astshapes.loop_work says why a write counts).
    """
    if facts.isolating_try:
        return not any(write for _, write in facts.work)
    return depth < _HELPER_DEPTH and bool(facts.work) and all(
        not write and _handled(project, facts, target, depth + 1) for target, write in facts.work)


def _no_work(project: Project, facts: FunctionFacts, depth: int) -> bool:
    if facts.no_row_work:
        return True
    if depth >= _HELPER_DEPTH or not facts.makes_calls:
        return False
    for target, write in facts.row_work:
        if write or target is None:
            return False
        if not any(_no_work(project, callee, depth + 1) for callee in project.callees(facts, Call(target, False, 0, 0))):
            return False
    return True


def _short(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# BL004 --------------------------------------------------------------------


def reference_queries_per_item(project: Project) -> list[Finding]:
    """Queries on reference models inside a loop or in a function called per item."""
    holders = [facts for module in project.modules if module.role in ("app", "admin")
               for facts in module.functions if facts.reference_queries]
    if not holders:
        return []
    # Modules read with no configured list recorded every read-only query; keep those on inferred models.
    inferred = inferred_reference_models(project.modules) if any(m.infer_references for m in project.modules) else None
    everyone = [facts for module in project.modules for facts in module.functions]
    per_item_functions = per_item(project, everyone, stop=lambda facts: facts.is_cached)
    findings = []
    for facts in holders:
        if facts.is_cached or _inside_cached(facts):
            continue
        origin = per_item_functions.get(facts)
        for query in facts.reference_queries:
            if facts.module.infer_references and query.model not in inferred:
                continue
            if query.in_loop:
                place = "inside a loop"
            elif origin is not None:
                place = f"in {_where(facts)}, run per item by the loop at {_loop_at(origin, facts)}"
            else:
                continue
            findings.append(
                Finding(
                    facts.module.display,
                    query.line,
                    query.column,
                    "BL004",
                    f"reference data `{query.model}` read {place}",
                    end_line=query.end_line,
                )
            )
    return findings


def _inside_cached(facts: FunctionFacts) -> bool:
    parent = facts.parent
    while parent is not None:
        if parent.is_cached:
            return True
        parent = parent.parent
    return False


# BL005 --------------------------------------------------------------------


def frozen_pg_stats(project: Project) -> list[Finding]:
    """Two pg_stat_* reads in one transaction with no pg_stat_clear_snapshot() between."""
    if not any(module.mentions_pg_stat for module in project.modules):
        return []
    effects: dict[FunctionFacts, list[str]] = {}
    findings = []
    for module in project.modules:
        for facts in module.functions:
            if facts.autocommit:
                continue
            scopes = list(facts.scopes)
            whole_body = facts.opens_connection or facts.manual_transaction
            if (module.mentions_pg_stat and whole_body) or facts.is_atomic:
                scopes.append((facts.line, facts.events))
            for _, events in scopes:
                findings.extend(_scan(project, facts, events, effects))
    return findings


def _flatten(project: Project, facts: FunctionFacts, events: list[tuple], effects: dict, depth: int):
    """(kind, line, column) of reads and clears; a helper's reads sit at the call's position."""
    for event in events:
        kind = event[0]
        if kind == "R":
            yield event
        elif kind == "C":
            yield ("C", 0, 0)
        else:
            _, target, line, column = event
            for callee in project.callees(facts, Call(target, False, line, column)):
                for effect in _effect(project, callee, effects, depth + 1):
                    yield (effect, line, column)


def _effect(project: Project, facts: FunctionFacts, effects: dict, depth: int) -> list[str]:
    """What calling a function does to the stats snapshot: its reads and clears in order."""
    if facts in effects:
        return effects[facts]
    # A function on a connection of its own (autocommit or not) reads outside the caller's transaction.
    if facts.autocommit or facts.opens_connection or depth > _MAX_DEPTH or not facts.events:
        return []
    effects[facts] = []  # a recursive call reads nothing more
    sequence: list[str] = []
    for kind, _, _ in _flatten(project, facts, facts.events, effects, depth):
        # Runs are capped: two reads already make the point, one clear resets.
        if sequence[-2:] == [kind, kind] or (kind == "C" and sequence[-1:] == ["C"]):
            continue
        sequence.append(kind)
    effects[facts] = sequence
    return sequence


def _scan(project: Project, facts: FunctionFacts, events: list[tuple], effects: dict) -> list[Finding]:
    findings = []
    first_read = None
    for kind, line, column in _flatten(project, facts, events, effects, 0):
        if kind == "C":
            first_read = None
            continue
        if first_read is not None:
            again = (
                "again inside a loop" if first_read == (line, column) else f"again (first read at line {first_read[0]})"
            )
            findings.append(
                Finding(
                    facts.module.display,
                    line,
                    column,
                    "BL005",
                    f"pg_stat_* read {again} in one transaction: it returns the first read's frozen snapshot",
                )
            )
        first_read = (line, column)
    return findings
