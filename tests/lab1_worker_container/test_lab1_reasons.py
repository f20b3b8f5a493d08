"""Hidden static check of lab 1: every time limit in entrypoint.sh and settings.py carries its reason."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

SLUG = "lab1_worker_container"
SETTING_NAMES = ("task_soft_time_limit", "task_time_limit")
# A command sets a budget when it passes a limit flag or assigns a variable named like one.
BUDGET_IN_SHELL = re.compile(r"--(?:soft-)?time-limit\b|\b[A-Za-z_]*TIME_LIMIT[A-Za-z_]*=")
QUEUE_FLAG = re.compile(r"(?:-Q|--queues)[ =]?(\S+)")
WHY = ("a budget is a decision someone made, and the next reviewer should find the reason where the number is set")


def _is_reason(comment: str) -> bool:
    """A reason is a comment of a few words that is not a TODO."""
    text = comment.lstrip("#").strip()
    return not text.upper().startswith("TODO") and len(re.findall(r"[A-Za-z0-9]+", text)) >= 4


def _trailing_comment(line: str) -> str | None:
    """Return a shell line's comment after the code, outside quotes."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1].isspace()):
            return line[index:]
    return None


def _comments_above(lines: list[str], first: int) -> list[str]:
    """Return the comment lines directly above a 0-based line, nearest first."""
    found = []
    index = first - 1
    while index >= 0 and lines[index].lstrip().startswith("#") and not lines[index].startswith("#!"):
        found.append(lines[index].strip())
        index -= 1
    return found


def _shell_budgets_without_reason(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    problems = []
    index = 0
    while index < len(lines):
        first = index
        while lines[index].rstrip().endswith("\\") and index + 1 < len(lines):
            index += 1
        command = lines[first:index + 1]
        index += 1
        code = " ".join(line.rstrip("\\") for line in command)
        if code.lstrip().startswith("#") or not BUDGET_IN_SHELL.search(code):
            continue
        comments = _comments_above(lines, first) + list(filter(None, map(_trailing_comment, command)))
        if not any(_is_reason(comment) for comment in comments):
            queue = QUEUE_FLAG.search(code)
            what = f"the budget of the '{queue[1].strip(chr(34))}' master" if queue else "a time limit"
            problems.append(f"{path.name} line {first + 1}: {what}")
    return problems


def _settings_budgets_without_reason(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
    problems = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        else:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id in SETTING_NAMES:
                nearby = _comments_above(lines, node.lineno - 1) + [
                    comments[number] for number in range(node.lineno, node.end_lineno + 1) if number in comments]
                if not any(_is_reason(comment) for comment in nearby):
                    problems.append(f"{path.name} line {node.lineno}: {target.id}")
    return problems


def test_every_budget_has_its_reason_next_to_it(target_dir):
    """Every time limit set in entrypoint.sh or settings.py has a comment next to it that says why."""
    folder = target_dir / SLUG
    problems = _shell_budgets_without_reason(folder / "entrypoint.sh")
    problems += _settings_budgets_without_reason(folder / "settings.py")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    assert not problems, f"{problems[0] if problems else ''} has no comment next to it that says why{more}: {WHY}"
