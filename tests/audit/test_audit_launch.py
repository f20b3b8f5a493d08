"""BL001 on launch files read as text: the forms a worker command line takes, and the comments that excuse it."""

from __future__ import annotations

import textwrap

import pytest

from budgetlab.audit.launch_lines import read_commands
from budgetlab.audit.rules_launch import check_launch_file


def _lines_found(text: str, kind: str) -> list[int]:
    return [finding.line for finding in check_launch_file("f", textwrap.dedent(text), kind)]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ('CMD celery -A kontor worker --time-limit=900\n', "shell", [1]),
        ('ENTRYPOINT ["python", "-m", "celery", "-A", "kontor", "worker", "--soft-time-limit=45"]\n', "shell", [1]),
        ('sh -c "cd /app && celery -A kontor worker -Q ocr --soft-time-limit 300"\n', "shell", [1]),
        ("celery -A kontor multi start w1 -Q:w1 imports --soft-time-limit=120\n", "shell", [1]),
        ("exec \\\n  celery -A kontor worker \\\n  -Q imports \\\n  --time-limit ${TIME_LIMIT-150}\n", "shell", [4]),
        ("command=celery -A kontor worker --soft-time-limit 120\n", "keyvalue", [1]),
        ("command: [celery, -A, kontor, worker, --soft-time-limit, '120']\n", "yaml", [1]),
        ("command: >\n  celery -A kontor worker\n  --soft-time-limit ${SOFT_TIME_LIMIT:-120}\n", "yaml", [3]),
        ("steps:\n  - run: celery -A kontor worker --soft-time-limit 120 &\n", "yaml", [2]),
    ],
)
def test_worker_line_forms_are_found(text, kind, expected):
    """Exec form, python -m celery, sh -c strings, multi, continuations, supervisor and YAML flow/folded forms."""
    assert _lines_found(text, kind) == expected, f"{kind}: {text!r}"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("celery -A kontor worker -Q imports --concurrency 4\n", "shell"),
        ("celery -A kontor worker --soft-time-limit $SOFT_TIME_LIMIT\n", "shell"),
        ("celery -A kontor beat --soft-time-limit 120\n", "shell"),
        ("# celery -A kontor worker --soft-time-limit 120\n", "shell"),
        ("echo celery; soft_time_limit=120 --time-limit\n", "shell"),
        ("; ExecStart=celery -A kontor worker --soft-time-limit 120\n", "keyvalue"),
    ],
)
def test_lines_that_are_not_a_worker_budget_are_ignored(text, kind):
    """No limit flag, a plain $VAR from the environment, another subcommand, or a comment: nothing found."""
    assert _lines_found(text, kind) == [], f"{kind}: {text!r}"


@pytest.mark.parametrize(
    ("comment_above", "same_line", "reported"),
    [
        ("# A person waits on the interactive queue: 45 s soft limit.", "", False),
        ("", "  # batch agents: a generous budget for 95 files", False),
        ("# Start the worker.", "", True),
        ("# TODO: explain why the limit is 45 seconds", "", True),
        ("", "  # noqa-free comment without reason", True),
    ],
)
def test_a_literal_budget_needs_a_comment_that_gives_the_reason(comment_above, same_line, reported):
    """A literal flag passes when a comment on its line or right above explains the budget; a TODO does not."""
    text = (comment_above + "\n" if comment_above else "") + (
        f"celery -A kontor worker -Q agent-interactive --soft-time-limit 45{same_line}\n"
    )
    assert bool(_lines_found(text, "shell")) == reported, text


def test_a_shell_fallback_is_reported_even_with_a_comment():
    """`${SOFT_TIME_LIMIT:-120}` is never a chosen budget, whatever the comment says."""
    text = (
        "# Budget: two minutes, chosen for the import queue.\n"
        "celery -A k worker --soft-time-limit ${SOFT_TIME_LIMIT:-120}\n"
    )
    assert _lines_found(text, "shell") == [2]


def test_a_comment_above_a_neighbour_does_not_explain_the_next_line():
    """Only the comments directly above a command count for it."""
    text = """\
        # Interactive: a person waits, so 45 seconds.
        celery -A k worker -Q agent-interactive --soft-time-limit 45 &
        celery -A k worker -Q imports --soft-time-limit 300 &
    """
    assert _lines_found(text, "shell") == [3]


def test_kubernetes_command_and_args_are_read_together():
    """A container's `command:` and `args:` form one command line, even with keys between them."""
    text = """\
        containers:
          - name: worker
            command:
              - celery
            image: kontor
            args:
              - -A
              - kontor
              - worker
              - --time-limit=900
          - name: sidecar
            args: ["--time-limit=5"]
    """
    assert _lines_found(text, "yaml") == [10]


def test_words_keep_their_positions():
    """Each word of a JSON-array CMD knows its line and column, for the finding's location."""
    lines, commands = read_commands('CMD ["celery", "worker", "--soft-time-limit", "300"]\n', "shell")
    words = {word.text: (word.line, word.column) for word in commands[0].words}
    assert words["--soft-time-limit"] == (1, lines[0].index("--soft-time-limit") + 1), words
    assert words["300"] == (1, lines[0].index("300") + 1), words
