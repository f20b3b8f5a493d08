"""BL006: a worker on a pool that does not apply the time limits the audited tasks declare.

Celery's time limits are the pool's: prefork applies both, gevent only the
hard one, threads, solo and (measured on Celery 5.6.3) eventlet none. A
worker that runs one of those pools, by a launch line's --pool/-P or by a
worker_pool setting, keeps showing the tasks' declared limits in `celery
inspect` while nothing applies them. The rule flags the pool choice when
the audited tree declares a limit that pool drops: a soft limit on any of
them, a hard limit on all but gevent (in task decorators, task classes, a
project-wide setting or a worker flag). It does not follow task routes to
queues: every worker in the tree is matched against every declared limit.
"""

from __future__ import annotations

import re

from dataclasses import dataclass
from pathlib import Path

from budgetlab.audit.findings import Finding
from budgetlab.audit.launch_lines import read_commands
from budgetlab.audit.noqa import silenced
from budgetlab.audit.pyrecords import ModuleFacts
from budgetlab.audit.rules_launch import _invocations, _options, _queue_phrase
from budgetlab.audit.task_options import as_written

#: What each pool does with the limits, as tests/pools measures it on Celery 5.6.3
#: (docs/concepts/pools.md): which of the two it drops, and how the message says so.
DROPS = {"threads": ("soft", "hard"), "solo": ("soft", "hard"), "eventlet": ("soft", "hard"), "gevent": ("soft",)}
_APPLIES = {"threads": "applies neither time limit", "solo": "applies neither time limit",
            "eventlet": "applied neither time limit when measured", "gevent": "applies only the hard limit"}


@dataclass(frozen=True)
class Declared:
    """A time limit the audited tree declares."""

    #: "soft" (soft_time_limit) or "hard" (time_limit).
    kind: str
    #: Its number of seconds, or None where the audit cannot read it.
    seconds: float | None
    #: Where: "task `render`", "setting at settings.py:2", "worker flag at worker.sh:3".
    where: str
_SETTING = re.compile(rb"""\b(?:CELERY_WORKER_POOL|CELERYD_POOL|worker_pool)['"]?\s*[=:]\s*['"](?P<pool>threads|solo|gevent|eventlet)['"]""")


def pool_settings(source: bytes) -> list[tuple[int, int, str]]:
    """(line, column, pool) of every worker_pool setting in a Python source that names a limit-dropping pool."""
    if b"POOL" not in source and b"worker_pool" not in source:
        return []
    found = []
    for match in _SETTING.finditer(source):
        line_start = source.rfind(b"\n", 0, match.start()) + 1
        found.append((source.count(b"\n", 0, match.start()) + 1, match.start() - line_start + 1,
                      match.group("pool").decode()))
    return found


def launch_pools(display: str, text: str, kind: str) -> list[tuple[Finding, str]]:
    """(a finding without its message yet, pool word) for each worker line of a launch file that names its pool.

    The word is a pool name or a reference to be resolved (`${POOL:-solo}`,
    `$POOL`, `{{ .Values.worker.pool }}`); runner.py resolves it against the
    values the launch files set.
    """
    lines, commands = read_commands(text, kind)
    found = []
    for command in commands:
        for words in _invocations(command):
            texts = [word.text for word in words]
            for index, word in enumerate(words):
                pool = _pool_value(texts, index)
                if pool and (pool in DROPS or "$" in pool or "{{" in pool) and not any(
                        silenced(lines[n - 1], "BL006") for n in
                        range(command.anchor_line, command.last_line + 1) if n <= len(lines)):
                    found.append((Finding(display, word.line, word.column, "BL006", _queue_phrase(_options(words)[1]),
                                          end_line=command.last_line), pool))
    return found


def _pool_value(texts: list[str], index: int) -> str | None:
    text = texts[index]
    if text in ("-P", "--pool"):
        following = texts[index + 1] if index + 1 < len(texts) else ""
        if following in ("{{", "{{-"):  # an unquoted Helm expression split into words: join it again
            end = next((n for n in range(index + 1, len(texts)) if texts[n] in ("}}", "-}}")), len(texts) - 1)
            return " ".join(texts[index + 1 : end + 1])
        return following
    for prefix in ("--pool=", "-P"):
        if text.startswith(prefix) and len(text) > len(prefix):
            return text[len(prefix):].lstrip("=")
    return None


def declared_limits(modules: list[ModuleFacts], soft_flags: list[str],
                    hard_flags: list[tuple[str, float | None]]) -> list[Declared]:
    """Every limit the audited tree declares: in task decorators and classes, settings and worker flags."""
    found = []
    for module in modules:
        # A method is among the module's functions and its class's methods: count it once.
        functions = {id(f): f for f in [*module.functions, *(f for methods in module.classes.values()
                                                               for f in methods.values())]}
        for facts in functions.values():
            if facts.is_task and (facts.soft_limit or "hard" in facts.limits):
                for kind in ("soft", "hard"):
                    if kind in facts.limits or (kind == "soft" and facts.soft_limit):
                        found.append(Declared(kind, facts.limits.get(kind), f"task `{facts.qualname}`"))
        for kind, (line, seconds) in module.limit_settings.items():
            found.append(Declared(kind, seconds, f"setting at {Path(module.display).name}:{line}"))
    found.extend(Declared("soft", None, f"worker flag at {Path(where).name}") for where in soft_flags)
    found.extend(Declared("hard", seconds, f"worker flag at {Path(where).name}") for where, seconds in hard_flags)
    return found


def dropped(pool: str, declared: list[Declared]) -> list[Declared]:
    """The declared limits the pool does not apply."""
    kinds = DROPS.get(pool, ())
    return [limit for limit in declared if limit.kind in kinds]


def message(who: str, pool: str, limits: list[Declared], source: str | None = None) -> str:
    """`The worker ... runs the solo pool (...), which applies neither time limit: the hard limit of 43200 s (...) never applies`."""
    named = f" ({source})" if source else ""
    parts = [_phrase(kind, [limit for limit in limits if limit.kind == kind]) for kind in ("soft", "hard")]
    verb = "never applies" if len(limits) == 1 else "never apply"
    return f"{who} runs the {pool} pool{named}, which {_APPLIES[pool]}: {' and '.join(filter(None, parts))} {verb}"


def _phrase(kind: str, limits: list[Declared]) -> str:
    if not limits:
        return ""
    first = limits[0]
    amount = f"{as_written(first.seconds)} s" if first.seconds is not None else ""
    if len(limits) == 1:
        return f"the {kind} limit of {amount} ({first.where})" if amount else f"the {kind} limit ({first.where})"
    example = f"{amount}, {first.where}" if amount else first.where
    return f"{len(limits)} {kind} limits (e.g. {example})"
