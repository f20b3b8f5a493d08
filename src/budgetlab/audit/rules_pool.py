"""BL006: a worker on a pool that does not apply the time limits the audited tasks declare.

Celery's time limits are the pool's: prefork applies both, gevent only the
hard one, threads, solo and (measured on Celery 5.6.3) eventlet none. A
worker that runs one of those pools, by a launch line's --pool/-P or by a
worker_pool setting, keeps showing the tasks' declared limits in `celery
inspect` while nothing applies them. The rule flags the pool choice when
the audited tree declares soft limits (in task decorators, task classes, a
project-wide setting or a worker flag), since those are what go missing.
It does not follow task routes to queues: every worker in the tree is
matched against every declared limit.
"""

from __future__ import annotations

import re

from budgetlab.audit.findings import Finding
from budgetlab.audit.launch_lines import read_commands
from budgetlab.audit.noqa import silenced
from budgetlab.audit.pyrecords import ModuleFacts
from budgetlab.audit.rules_launch import _invocations, _options, _queue_phrase

#: What each pool does with the limits, as tests/pools measures it on Celery 5.6.3.
DROPS = {"threads": "applies no time limit", "solo": "applies no time limit",
         "eventlet": "applied no time limit when measured", "gevent": "applies only the hard limit"}
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


def declared_soft_limits(modules: list[ModuleFacts], worker_limits: list[str]) -> list[str]:
    """Where the audited tree declares soft limits: "task name", "setting at path:line" or "worker flag at path:line"."""
    found = []
    for module in modules:
        functions = [*module.functions, *(f for methods in module.classes.values() for f in methods.values())]
        found.extend(f.qualname for f in functions if getattr(f, "is_task", False) and getattr(f, "soft_limit", None))
        if module.soft_limit_setting:
            found.append(f"a setting at {module.display}:{module.soft_limit_setting}")
    found.extend(f"a worker flag at {where}" for where in worker_limits)
    return found


def message(who: str, pool: str, declared: list[str], source: str | None = None) -> str:
    count = f"{len(declared)} declared soft limits" if len(declared) > 1 else "a declared soft limit"
    named = f" ({source})" if source else ""
    return f"{who} runs the {pool} pool{named}, which {DROPS[pool]}: {count} (e.g. {declared[0]}) never apply"
