"""BL001: worker command lines whose time limits come from a shell fallback or an unexplained literal."""

from __future__ import annotations

import re

from budgetlab.audit.findings import Finding
from budgetlab.audit.launch_lines import (
    Command,
    Word,
    comment_of,
    is_comment_line,
    read_commands,
)
from budgetlab.audit.noqa import silenced

LIMIT_FLAGS = ("--soft-time-limit", "--time-limit")
# The settings each worker flag overrides, named in the message.
SETTING_OF = {"--soft-time-limit": "task_soft_time_limit", "--time-limit": "task_time_limit"}
_FALLBACK = re.compile(r"^\$\{(?P<var>\w+)(?P<op>:?[-=])(?P<default>[^}]*)\}$")
_LITERAL = re.compile(r"^\d+(?:\.\d+)?$")
_WORDS = re.compile(r"[A-Za-z][A-Za-z'-]+")
# A comment explains a budget when it speaks about time or the choice: a
# number, or one of these words. "Start the workers" does not explain 300.
_BUDGET_WORDS = re.compile(
    r"\d|budget|limit|second|minute|hour|timeout|time|wait|slow|fast|long|short|"
    r"latency|p9\d|generous|tight|person|user|interactive|batch|sla",
    re.IGNORECASE,
)


def _is_celery(word: str) -> bool:
    tail = word.rsplit("=", 1)[-1]
    return tail == "celery" or tail.endswith("/celery")


def _invocations(command: Command) -> list[list[Word]]:
    """Words of each `celery ... worker|multi ...` invocation in a command."""
    found: list[list[Word]] = []
    words = command.words
    starts = [index for index, word in enumerate(words) if _is_celery(word.text)]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(words)
        part = words[start:end]
        if any(word.text in ("worker", "multi") for word in part[1:]):
            found.append(part)
    return found


def _options(words: list[Word]) -> tuple[list[tuple[str, Word, str]], list[str]]:
    """Time-limit flags as (flag, flag word, value) and the queue names of -Q/--queues."""
    limits: list[tuple[str, Word, str]] = []
    queues: list[str] = []
    index = 0
    while index < len(words):
        text = words[index].text
        following = words[index + 1].text if index + 1 < len(words) else None
        for flag in LIMIT_FLAGS:
            if text == flag and following is not None:
                limits.append((flag, words[index], following))
                index += 1
            elif text.startswith(flag + "="):
                limits.append((flag, words[index], text[len(flag) + 1 :]))
        queue_value = None
        if text in ("-Q", "--queues") or (text.startswith("-Q:") and len(text) > 3):
            queue_value = following
            index += 1
        elif text.startswith("--queues="):
            queue_value = text[len("--queues=") :]
        elif text.startswith("-Q") and len(text) > 2 and not text.startswith("-Q:"):
            queue_value = text[2:].lstrip("=")
        if queue_value:
            queues.extend(name for name in queue_value.split(",") if name)
        index += 1
    return limits, queues


def _comment_block_above(lines: list[str], line: int, semicolon: bool) -> list[str]:
    """Comment lines directly above a 1-based line, nearest first."""
    texts = []
    index = line - 2
    while index >= 0 and is_comment_line(lines[index], semicolon):
        texts.append(lines[index].lstrip().lstrip("#;").strip())
        index -= 1
    return texts


def _explains(text: str | None) -> bool:
    """True for a comment that reads like a reason for a budget."""
    if not text:
        return False
    text = re.sub(r"noqa(?::\s*[\w, ]*)?", "", text, flags=re.IGNORECASE).strip()
    if text.upper().startswith(("TODO", "FIXME", "XXX")):
        return False
    return len(_WORDS.findall(text)) >= 3 and bool(_BUDGET_WORDS.search(text))


def _explained(lines: list[str], command: Command, flag: Word, semicolon: bool) -> bool:
    """A literal budget is a choice when a comment on its line, or right above, gives the reason."""
    if _explains(comment_of(lines[flag.line - 1], semicolon)):
        return True
    for line in {command.anchor_line, command.first_line, flag.line}:
        if any(_explains(text) for text in _comment_block_above(lines, line, semicolon)):
            return True
    return False


def _silenced(lines: list[str], command: Command, semicolon: bool) -> bool:
    """`# noqa: BL001` on any line of the command or in the comments right above it."""
    numbers = set(range(command.anchor_line, command.last_line + 1))
    above = command.anchor_line - 1
    while above >= 1 and is_comment_line(lines[above - 1], semicolon):
        numbers.add(above)
        above -= 1
    return any(silenced(lines[number - 1], "BL001") for number in numbers if number <= len(lines))


def _queue_phrase(queues: list[str]) -> str:
    if not queues:
        return "The worker without -Q (all its default queues)"
    label = "queue" if len(queues) == 1 else "queues"
    return f"The worker for {label} " + ", ".join(queues)


def check_launch_file(
    display: str, text: str, kind: str, soft_limits: list[str] | None = None,
    hard_limits: list[tuple[str, float | None]] | None = None,
) -> list[Finding]:
    """BL001 findings of one launch file.

    Every worker line that sets --soft-time-limit is also added to soft_limits
    as "path:line", for BL002 to say where a task's soft limit comes from, and
    every one that sets --time-limit to hard_limits as ("path:line", seconds
    or None), for BL006.
    """
    lines, commands = read_commands(text, kind)
    semicolon = kind == "keyvalue"
    findings: list[Finding] = []
    for command in commands:
        for words in _invocations(command):
            limits, queues = _options(words)
            if soft_limits is not None:
                soft_limits.extend(f"{display}:{word.line}" for flag, word, _ in limits if flag == LIMIT_FLAGS[0])
            if hard_limits is not None:
                hard_limits.extend((f"{display}:{word.line}", flag_seconds(value))
                                   for flag, word, value in limits if flag == LIMIT_FLAGS[1])
            if not limits or _silenced(lines, command, semicolon):
                continue
            for flag, word, value in limits:
                message = _message(flag, value, queues, lines, command, word, semicolon)
                if message:
                    findings.append(Finding(display, word.line, word.column, "BL001", message, end_line=command.last_line))
    return findings


def flag_seconds(value: str) -> float | None:
    """The seconds a limit flag gives: a number, or the default of a shell fallback (`${X:-120}`); else None."""
    fallback = _FALLBACK.match(value)
    if fallback:
        value = fallback.group("default")
    return float(value) if _LITERAL.match(value) else None


def _message(
    flag: str, value: str, queues: list[str], lines: list[str], command: Command, word: Word, semicolon: bool
) -> str | None:
    who = _queue_phrase(queues)
    setting = SETTING_OF[flag]
    fallback = _FALLBACK.match(value)
    if fallback:
        default = fallback.group("default") or "empty"
        return (
            f"{who} takes {flag} from the shell fallback {value}: {default} s while "
            f"{fallback.group('var')} is unset, overriding {setting}"
        )
    if _LITERAL.match(value) and not _explained(lines, command, word, semicolon):
        return f"{who} sets {flag} {value} with no comment giving the reason, overriding {setting}"
    return None
