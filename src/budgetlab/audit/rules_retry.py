"""BL008: retries that wait Celery's default delay past a task's own limit, come back in step, or are swallowed.

Celery 5.6.3 sends every retry as a new message (celery/app/task.py line
786) that a worker runs under a fresh time limit, after a pause of
default_retry_delay (180 s, line 222) unless the retry names another, up to
max_retries times (3, line 218). The rule reads each task's retry options
and retry calls (retry_sites.py) and reports:

- a task with its own time_limit (or soft_time_limit) whose retries wait
  Celery's default delay, which the code never set, for at least that limit
  in all, while nothing bounds the total: no `expires` on the task, on a
  send of it or on a retry, no deadline compared with a clock;
- a retry after a rate limit or an overload (RateLimitError, 429, 503, a
  status range that admits them such as `>= 500`, throttled...) whose delay
  has no random part, so tasks refused together come back together;
- a retry by hand, with no countdown, in a task whose `retry_backoff` only
  autoretry_for reads (celery/app/autoretry.py lines 21-24 and 48-54), so
  every retry waits the same default_retry_delay;
- a task sending itself again from a handler without the `expires` its
  first send carries (self.retry() would keep it);
- a catch-all handler that swallows the Retry a retry call raises
  (retry_swallowed.py). This one is an error.

A delay or a count the code sets itself is taken as chosen, whatever the
total: the audit cannot know the promise a task keeps. A delay it cannot
read (a setting, a header read at run time) leaves the retry unjudged: a
finding is then missing, never invented.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from budgetlab.audit.astshapes import terminal_name
from budgetlab.audit.findings import Finding
from budgetlab.audit.pyrecords import ModuleFacts
from budgetlab.audit.retry_sites import Function, ModuleReader, Site, assignments, short
from budgetlab.audit.retry_swallowed import swallowed
from budgetlab.audit.task_options import TaskDeclaration, as_written, dict_items, number

# Celery 5.6.3's defaults for a task that does not set them (celery/app/task.py lines 218 and 222).
MAX_RETRIES = 3
DEFAULT_RETRY_DELAY = 180.0
# What a provider or a shared service says when it is overloaded: retries after it meet the same limit again.
_OVERLOAD = re.compile(r"ratelimit|throttl|toomanyrequests|serviceunavailable|overload|quota|^(429|503)$")
_RANDOM = frozenset({"uniform", "random", "randint", "randrange", "triangular", "gauss", "normalvariate",
                     "expovariate", "betavariate", "lognormvariate", "choice", "randbelow"})
# Calls whose result depends only on their arguments: they add no spread, and hide none.
_PURE = frozenset({"max", "min", "float", "int", "abs", "round", "pow", "len", "get", "total_seconds"})
# An attribute named retry, and `expires=` as a keyword: the text a module needs for either to be worth a walk.
_RETRY_CALL = re.compile(rb"\.retry\b")
_EXPIRES_KEYWORD = re.compile(rb"\bexpires\s*=")


@dataclass
class Schedule:
    """How one retry path of a task waits: how often, how long, and whether the waits spread."""

    #: Retries at most; None when unbounded (max_retries=None) or unreadable.
    count: int | None
    #: "fixed" (no random part), "spread" (a random part) or "unknown".
    spread: str
    #: How it waits, for the message: "countdown=60", "Celery's default 180 s (default_retry_delay)".
    wait_text: str
    #: The pause is Celery's default_retry_delay, which the code never set.
    default_delay: bool = False
    #: What bounds the retries, for the message: "3 retries at most (Celery's default)", "for ever (...)".
    bound: str = ""
    #: A retry call that names no countdown or eta: it waits default_retry_delay (the task's or Celery's).
    retry_delay: bool = False


def check_retries(readers: dict, expiring: set[str], sources, tree_of, modules: list[ModuleFacts]) -> list[Finding]:
    """Findings of BL008 over every audited module taken together.

    readers maps the display path of each module that mentions a retry to
    its ModuleReader, and expiring holds the names sent with `expires=`
    (expiring_sends), both made while each module's tree was at hand.
    sources maps each module's display path to (bytes, task decorators from
    its config) and tree_of(display) parses a module again: callers of a
    helper that raises Retry are found through the modules' facts, and only
    those callers' modules are read a second time.
    """
    findings = []
    for reader in readers.values():
        for task in reader.tasks:
            findings.extend(_judge_task(reader, task, expiring))
    findings.extend(swallowed(readers, sources, tree_of, modules))
    return findings


def reads_module(data: bytes, task_decorators: frozenset[str] = frozenset()) -> bool:
    """True for a module BL008 reads through a ModuleReader now: one that mentions a retry, with tasks or retry calls.

    What a reader gives is the retries of the module's tasks and its retry
    calls (`X.retry(...)`): a module that declares no task (no `task`, no
    `Task`, none of the configured task decorators) and calls no `.retry` gives
    nothing, and the few such modules a helper's caller needs are read later.
    """
    if b"retry" not in data:
        return False
    return b"task" in data or b"Task" in data or _RETRY_CALL.search(data) is not None or any(
        name.encode() in data for name in task_decorators)


# Schedules -----------------------------------------------------------------


def _count(reader: ModuleReader, value: ast.expr | None) -> tuple[int | None, str]:
    """(retries at most, what the message says bounds them) from a max_retries value.

    A missing one is Celery's default of 3 (celery/app/task.py line 218);
    None on the task never stops (lines 216-217).
    """
    if value is None:
        return MAX_RETRIES, f"{MAX_RETRIES} retries at most (Celery's default)"
    if _is_none(value):
        return None, "for ever (max_retries=None)"
    read = number(value, reader.constants)
    if read is None:
        return None, f"max_retries={short(value)} retries at most"
    count = int(read)
    return count, f"{'1 retry' if count == 1 else f'{count} retries'} at most (max_retries={short(value)})"


def _delay(task: TaskDeclaration, countdown: ast.expr | None, text: str) -> tuple[str, bool]:
    """How a fixed pause is set, and whether it is Celery's default_retry_delay (celery/app/task.py lines 755-756)."""
    if countdown is not None:
        return f"{text}={short(countdown)}", False
    if "default_retry_delay" in task.options:
        return f"default_retry_delay={short(task.options['default_retry_delay'])}", False
    return f"Celery's default {as_written(DEFAULT_RETRY_DELAY)} s (default_retry_delay)", True


def _autoretry(reader: ModuleReader, task: TaskDeclaration) -> Schedule | None:
    """How `autoretry_for` retries, as celery/app/autoretry.py lines 21-60 read the options."""
    options = task.options
    given = options.get("autoretry_for")
    if given is None or (type(given) in (ast.Tuple, ast.List) and not given.elts):
        return None
    retry_kwargs = _dict(reader, options.get("retry_kwargs"))
    if retry_kwargs is None:
        return Schedule(None, "unknown", "retry_kwargs")
    if "max_retries" in retry_kwargs and not _is_none(retry_kwargs["max_retries"]):
        count, bound = _count(reader, retry_kwargs["max_retries"])
    else:
        count, bound = _count(reader, options.get("max_retries"))
    backoff = options.get("retry_backoff")
    if not _backs_off(backoff):
        wait_text, default = _delay(task, retry_kwargs.get("countdown"), "retry_kwargs countdown")
        return Schedule(count, "fixed", wait_text, default, bound)
    jitter = options.get("retry_jitter")  # on by default (line 30), and only read with retry_backoff
    spread = "spread" if jitter is None or (type(jitter) is ast.Constant and jitter.value is True) else \
        "fixed" if type(jitter) is ast.Constant and jitter.value is False else "unknown"
    readable = type(backoff) is ast.Constant or number(backoff, reader.constants) is not None
    return Schedule(count, spread if readable else "unknown",
                    f"an exponential backoff (retry_backoff={short(backoff)}, retry_jitter="
                    f"{short(jitter) if jitter else True})", bound=bound)


def _backs_off(backoff: ast.expr | None) -> bool:
    """True for a retry_backoff option that turns the backoff on (celery/app/autoretry.py lines 21-24 and 48)."""
    return backoff is not None and not (type(backoff) is ast.Constant and not backoff.value)


def _retry_call(function: Function, task: TaskDeclaration, site: Site) -> Schedule:
    """How one `self.retry(...)` waits: its own max_retries and countdown, else the task's."""
    reader = function.reader
    given: dict = {}
    for keyword in site.call.keywords:
        if keyword.arg is not None:
            given[keyword.arg] = keyword.value
            continue
        spelled = _dict(reader, _option(task, keyword.value) or keyword.value)
        if spelled is None:
            return Schedule(None, "unknown", "**" + short(keyword.value))
        given.update(spelled)
    if "max_retries" in given and not _is_none(given["max_retries"]):  # None there means the task's own
        count, bound = _count(reader, given["max_retries"])
    else:
        count, bound = _count(reader, task.options.get("max_retries"))
    if "eta" in given:
        return Schedule(count, "unknown", "eta", bound=bound)
    if given.get("countdown") is None:
        return Schedule(count, "fixed", *_delay(task, None, ""), bound, retry_delay=True)
    countdown = _option(task, given["countdown"]) or given["countdown"]
    parameters = {argument.arg for argument in ast.walk(function.node.args) if type(argument) is ast.arg}
    if type(countdown) is ast.Name and countdown.id in parameters and countdown.id not in function.assigned:
        return Schedule(count, "unknown", f"countdown={countdown.id}", bound=bound)  # the caller chooses it
    return Schedule(count, _spread(countdown, reader, function.assigned), f"countdown={short(countdown)}",
                    bound=bound)


def _spread(expression: ast.expr, reader: ModuleReader, assigned: dict, depth: int = 0) -> str:
    """"spread" when a random draw takes part in a countdown, "unknown" when a call the audit cannot read does.

    Local names are followed to what the function assigns them (assigned),
    and calls of the module's own functions to what those return.
    """
    verdict = "fixed"
    for node in ast.walk(expression):
        found = None
        if type(node) is ast.Call:
            name = terminal_name(node.func)
            if name in _RANDOM:
                return "spread"
            if name == "get_exponential_backoff_interval":  # celery/utils/time.py lines 448-462
                given = dict(zip(("factor", "retries", "maximum", "full_jitter"), node.args))
                given.update({keyword.arg: keyword.value for keyword in node.keywords})
                jitter = given.get("full_jitter")
                if jitter is None or (type(jitter) is ast.Constant and not jitter.value):
                    continue
                return "spread" if type(jitter) is ast.Constant else "unknown"
            helper = reader.top_functions.get(node.func.id) if type(node.func) is ast.Name else None
            if helper is not None and depth < 3:
                inner = assignments(helper)
                found = {_spread(item.value, reader, inner, depth + 1) for item in ast.walk(helper)
                         if type(item) is ast.Return and item.value is not None}
            elif name not in _PURE:
                verdict = "unknown"
        elif type(node) is ast.Name and node.id in assigned and depth < 3:
            found = {_spread(value, reader, assigned, depth + 1) if isinstance(value, ast.expr) else "unknown"
                     for value in assigned[node.id]}
        if found and "spread" in found:
            return "spread"
        if found and "unknown" in found:
            verdict = "unknown"
    return verdict


# Judging a task ------------------------------------------------------------


def _judge_task(reader: ModuleReader, task: TaskDeclaration, expiring: set[str]) -> list[Finding]:
    functions = [function for function in reader.functions.values() if function.task is task]
    sites = [(function, site) for function in functions for site in function.sites]
    autoretry = _autoretry(reader, task)
    retries = [(site, _retry_call(function, task, site)) for function, site in sites if site.kind == "retry"]
    watched = any(function.watches_time for function in functions)
    sent_expiring = task.name in expiring or task.registered in expiring
    bounded = watched or sent_expiring or ("expires" in task.options and not _is_none(task.options["expires"])) \
        or any("expires" in _keywords(site.call) for _, site in sites)
    findings = []
    schedules = ([autoretry] if autoretry else []) + [schedule for _, schedule in retries]
    clock = None if bounded else _clock(reader, task, schedules)
    if clock:
        anchor = task.anchor
        findings.append(Finding(reader.display, anchor.lineno, anchor.col_offset + 1, "BL008", clock, "warning",
                                _header_end(anchor)))
    if autoretry and autoretry.spread == "fixed":
        trigger = _overload(_exception_names(reader, task.options["autoretry_for"]))
        if trigger:
            findings.append(_at(reader, task.options["autoretry_for"], _in_step(trigger, "autoretry", autoretry)))
    backoff = task.options.get("retry_backoff")
    for site, schedule in retries:
        retrier = f"`{short(site.call.func)}()`"
        if _backs_off(backoff) and schedule.retry_delay:
            # Task.retry never reads retry_backoff: only autoretry_for's wrapper does (celery/app/autoretry.py
            # lines 21-24 and 48-54), and it lets a Retry raised by hand through untouched (lines 43-44).
            findings.append(_at(reader, site.call, (
                f"{retrier} waits {schedule.wait_text} before every retry, {schedule.bound}: "
                f"retry_backoff={short(backoff)} applies only to autoretry_for, not to a retry by hand, so "
                "tasks that fail together come back together")))
            continue
        trigger = _overload(site.after)
        if trigger and schedule.spread == "fixed":
            findings.append(_at(reader, site.call, _in_step(trigger, retrier, schedule)))
    for _, site in sites:
        if site.kind == "resend" and sent_expiring and not watched and "expires" not in _keywords(site.call):
            findings.append(_at(reader, site.call, f"`{short(site.call.func)}()` sends `{task.name}` again without "
                                "the expires its first send set, so this retry outlives it (self.retry() keeps "
                                "expires)"))
    return findings


def _in_step(trigger: str, retrier: str, schedule: Schedule) -> str:
    return (f"after {trigger}, {retrier} waits {schedule.wait_text} with no random part, {schedule.bound}: "
            "tasks refused together come back together")


def _clock(reader: ModuleReader, task: TaskDeclaration, schedules: list[Schedule]) -> str | None:
    """The message when Celery's default pauses add up to the task's own limit and nothing bounds the total."""
    limit_name = next((name for name in ("time_limit", "soft_time_limit")
                       if name in task.options and not _is_none(task.options[name])), None)
    limit = number(task.options[limit_name], reader.constants) if limit_name else None
    if not limit or limit <= 0:
        return None
    schedule = next((schedule for schedule in schedules if schedule.default_delay and schedule.count
                     and schedule.count * DEFAULT_RETRY_DELAY >= limit), None)
    if schedule is None:
        return None
    count = schedule.count
    total = (count + 1) * limit + count * DEFAULT_RETRY_DELAY
    retries = "1 retry" if count == 1 else f"{count} retries"
    return (f"task `{task.name}` may end {as_written(total)} s after it is sent: {retries} after Celery's default "
            f"{as_written(DEFAULT_RETRY_DELAY)} s each, a fresh {as_written(limit)} s {limit_name} for every attempt, "
            "and no deadline")


def _exception_names(reader: ModuleReader, node: ast.expr, depth: int = 0) -> list[str]:
    """Names in an exception tuple, through a module-level tuple it names (`autoretry_for=_RETRYABLE`)."""
    elements = node.elts if type(node) in (ast.Tuple, ast.List) else [node]
    names = []
    for element in elements:
        if type(element) is ast.Starred:
            element = element.value
        name = element.attr if type(element) is ast.Attribute else element.id if type(element) is ast.Name else None
        value = reader.tuples.get(name) if name and depth < 3 else None
        names.extend(_exception_names(reader, value, depth + 1) if value is not None else [name] if name else [])
    return names


def _overload(names) -> str | None:
    """The first name or status code that says the service was overloaded, as the message shows it."""
    for name in names:
        if name.startswith("HTTP "):  # a status comparison that admits 429 or 5xx (retry_sites.status_codes)
            return name
        if name and _OVERLOAD.search(name.lower().replace("_", "")):
            return f"HTTP {name}" if name.isdigit() else name
    return None


# Small readers ---------------------------------------------------------------


def expiring_sends(tree: ast.Module, data: bytes) -> set[str]:
    """Names of the tasks a module sends with `expires=` (`task.apply_async(..., expires=60)`), and their names as sent."""
    names: set[str] = set()
    if _EXPIRES_KEYWORD.search(data) is None:
        return names
    for node in ast.walk(tree):
        if type(node) is ast.Call and any(keyword.arg == "expires" for keyword in node.keywords):
            root = node.func
            while type(root) in (ast.Attribute, ast.Call):
                root = root.value if type(root) is ast.Attribute else root.func
            if type(root) is ast.Name:
                names.add(root.id)
            if node.args and type(node.args[0]) is ast.Constant and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)  # send_task("app.tasks.answer", ..., expires=...)
    return names


def _dict(reader: ModuleReader, node: ast.expr | None) -> dict | None:
    """A dict's items, spelled out in place or bound to a module-level name; {} when absent."""
    if node is None:
        return {}
    if type(node) is ast.Name and node.id in reader.dicts:
        node = reader.dicts[node.id]
    return dict_items(node, reader.dicts) if type(node) is ast.Dict else None


def _option(task: TaskDeclaration, node: ast.expr) -> ast.expr | None:
    """`self.retry_backoff` in a task's body: the value the task's options give it."""
    if type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":
        return task.options.get(node.attr)
    return None


def _keywords(call: ast.Call) -> set:
    return {keyword.arg for keyword in call.keywords}


def _is_none(node: ast.expr) -> bool:
    return type(node) is ast.Constant and node.value is None


def _at(reader: ModuleReader, node: ast.expr, message: str) -> Finding:
    return Finding(reader.display, node.lineno, node.col_offset + 1, "BL008", message, "warning",
                   node.end_lineno or node.lineno)


def _header_end(anchor: ast.AST) -> int:
    """Last line of a decorator, or of a class statement's header, so `# noqa` on any of them counts."""
    if type(anchor) is ast.ClassDef:
        return anchor.body[0].lineno - 1 if anchor.body else anchor.lineno
    return anchor.end_lineno or anchor.lineno
