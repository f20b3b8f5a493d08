"""The rules on the fixture files: each bad file gives exactly its findings, good ones none."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

import pytest

from budgetlab.audit import audit
from budgetlab.audit.rules import RULES, SELECTABLE

# Every finding the bad fixtures must give: file -> (line, code), with repeats
# where one line has two findings (a soft and a hard limit).
EXPECTED = {
    "bad/lab1/entrypoint.sh": [(5, "BL001"), (6, "BL001"), (6, "BL001"), (8, "BL001"), (9, "BL001"),
                               (9, "BL001"), (10, "BL001")],
    "bad/lab1/Dockerfile": [(4, "BL001")],
    "bad/lab1/docker-compose.yml": [(4, "BL001"), (14, "BL001")],
    "bad/lab1/k8s-worker.yaml": [(12, "BL001")],
    "bad/lab1/Procfile": [(2, "BL001")],
    "bad/lab1/kontor-worker.service": [(6, "BL001")],
    "bad/lab2/tasks.py": [(20, "BL002"), (31, "BL002"), (51, "BL002")],
    "bad/lab2/services.py": [(13, "BL002")],
    "bad/lab3/sweeps.py": [(12, "BL003"), (19, "BL003"), (25, "BL003")],
    "bad/lab4/prompts.py": [(7, "BL004"), (13, "BL004")],
    "bad/lab4/tasks.py": [(23, "BL004")],
    "bad/lab5/stats.py": [(22, "BL005"), (31, "BL005"), (40, "BL005")],
    "bad/lab6/celeryconfig.py": [(6, "BL006")],
    "bad/lab6/worker.sh": [(3, "BL006")],
    # Budgets of two hours and of exactly one hour, a fortnight's countdown and a two-day retry delay,
    # against the default hour.
    "bad/lab7/tasks.py": [(8, "BL007"), (13, "BL007"), (24, "BL007"), (37, "BL007")],
    # Celery's default delay against a short limit (autoretry, self.retry(), a Task class), fixed waits after a
    # rate limit or a 429, and a task resent by hand without the expires of its first send.
    "bad/lab8/assistant.py": [(11, "BL008"), (11, "BL008"), (16, "BL008"), (29, "BL008"), (32, "BL008"),
                              (41, "BL008"), (45, "BL008"), (60, "BL008")],
    # Retries swallowed by except Exception, a bare except, a second retry, suppress(), and in a helper's caller.
    "bad/lab8/review.py": [(20, "BL008"), (30, "BL008"), (38, "BL008"), (44, "BL008"), (59, "BL008")],
    # Tasks declared through a function and a class that wrap shared_task, and
    # through a decorator named in the fixtures' task-decorators setting.
    "bad/classes/own_decorators.py": [(29, "BL003"), (35, "BL003"), (41, "BL003")],
    # A catch-all in a model method, reached through `hook_log.retry()` in a task's loop.
    "bad/classes/model_methods.py": [(15, "BL002")],
    # Python 3.12/3.14 syntax the interpreter may not read: still audited.
    "bad/classes/new_syntax.py": [(21, "BL002"), (23, "BL003")],
    # A loop nest is one finding, at its outer loop.
    "bad/classes/nested_loops.py": [(9, "BL003")],
    # Per-row effects, then a bulk write of other rows: not a gather-for-bulk loop.
    "bad/classes/effect_then_bulk_write.py": [(10, "BL003")],
}

# What the column of each rule's finding points at, in the source line.
POINTS_AT = {
    "BL001": ("--soft-time-limit", "--time-limit"),
    "BL002": ("except",),
    "BL003": ("for ",),
    "BL004": ("Category", "models.Category"),
    "BL005": ("cursor.execute", "read_scans"),
    "BL006": ("worker_pool", "-P"),
    "BL007": ("shared_task", "send_reminder.apply_async"),
    "BL008": ("app.task", "shared_task", "class ", "(openai.", "self.retry", "refresh_rates.apply_async", "except",
              "with "),
}

# A task whose loop swallows its soft limit: one BL002 wherever it is audited.
TASK_LOOP = """\
from celery import shared_task

@shared_task(soft_time_limit=60)
def run(items):
    for item in items:
        try:
            item.process()
        except Exception:
            pass
"""


def _found(root: Path, *parts: str) -> dict[str, list[tuple[int, str]]]:
    result = audit([str(root.joinpath(*parts))])
    found: dict[str, list[tuple[int, str]]] = {}
    for finding in result.findings:
        relative = Path(finding.path).resolve().relative_to(root.resolve()).as_posix()
        found.setdefault(relative, []).append((finding.line, finding.code))
    return found


def test_every_rule_has_a_bad_fixture():
    """Each rule code appears in the expected findings of the bad fixtures."""
    covered = {code for findings in EXPECTED.values() for _, code in findings}
    assert covered == set(SELECTABLE), f"rules without a bad fixture: {sorted(set(SELECTABLE) - covered)}"


def test_bad_fixtures_give_exactly_the_expected_findings(fixtures):
    """Every bad fixture gives its findings on the expected lines, and nothing else."""
    found = _found(fixtures, "bad")
    for name, expected in EXPECTED.items():
        assert Counter(found.get(name, [])) == Counter(expected), (
            f"{name}: expected (line, code) {sorted(expected)}, got {sorted(found.get(name, []))}"
        )
    unexpected = sorted(set(found) - set(EXPECTED))
    assert not unexpected, f"findings in files that should have none: {unexpected}"


def test_good_fixtures_give_no_findings(fixtures):
    """Look-alike correct code (re-raised limit, per-row helper, cache, autocommit, explained budgets) passes."""
    result = audit([str(fixtures / "good")])
    described = [f"{f.path}:{f.line} {f.code} {f.message}" for f in result.findings]
    assert not described, "correct code was reported:\n" + "\n".join(described)
    on_disk = [path for path in (fixtures / "good").rglob("*") if path.is_file()]
    assert result.files == len(on_disk), f"read {result.files} of the {len(on_disk)} good fixtures"


def test_columns_point_at_the_construct(fixtures):
    """A finding's column is where the flag, handler, loop, query or read starts."""
    for finding in audit([str(fixtures / "bad")]).findings:
        line = Path(finding.path).read_text(encoding="utf-8").splitlines()[finding.line - 1]
        rest = line[finding.column - 1 :]
        assert rest.startswith(POINTS_AT[finding.code]), (
            f"{finding.path}:{finding.line}:{finding.column} {finding.code} points at {rest[:30]!r}"
        )


def test_bl001_names_the_queues_and_the_fallback(fixtures):
    """A worker line with two queues names both and quotes the shell fallback it found."""
    result = audit([str(fixtures / "bad" / "lab1" / "entrypoint.sh")])
    line_6 = [finding.message for finding in result.findings if finding.line == 6]
    assert any("payments, matching" in message for message in line_6), f"queues not named: {line_6}"
    assert any("${SOFT_TIME_LIMIT:-120}" in message for message in line_6), f"fallback not quoted: {line_6}"


def test_bl002_names_the_loop_of_a_per_item_helper(fixtures):
    """A helper's catch-all finding says which loop runs it once per item."""
    result = audit([str(fixtures / "bad" / "lab2")])
    helper = [finding for finding in result.findings if finding.path.endswith("services.py")]
    assert helper and "tasks.py:68" in helper[0].message, f"loop not named: {helper}"
    assert "task `categorize_transactions`" in helper[0].message, f"reaching task not named: {helper}"


def test_bl004_names_the_model_and_where_it_runs_per_item(fixtures):
    """A reference-data finding names the model and the loop (or the loop's line) that repeats it."""
    result = audit([str(fixtures / "bad" / "lab4")])
    assert result.findings, "no BL004 in bad/lab4"
    for finding in result.findings:
        assert "`Category`" in finding.message, finding.message
        assert "loop" in finding.message, finding.message


REFERENCE_CATEGORY = """
    [tool.budgetlab.audit]
    reference-models = ["Category"]
"""


def _audit_sources(tmp_path: Path, sources: dict[str, str]) -> list[tuple[str, int, str]]:
    for name, text in sources.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    result = audit([str(tmp_path)])
    return sorted(
        (Path(finding.path).resolve().relative_to(tmp_path.resolve()).as_posix(), finding.line, finding.code)
        for finding in result.findings
    )


def test_calls_resolve_across_packages_by_import(tmp_path):
    """A task in one package reaches a helper in another through `import pkg.module`."""
    found = _audit_sources(
        tmp_path,
        {
            "kontor/__init__.py": "",
            "kontor/ocr/__init__.py": "",
            "kontor/ocr/extract.py": """
                def read_receipt(receipt):
                    try:
                        return receipt.ocr()
                    except Exception:
                        return None
            """,
            "kontor/tasks.py": """
                import kontor.ocr.extract
                from celery import shared_task

                @shared_task(soft_time_limit=60)
                def read_receipts(receipts):
                    for receipt in receipts:
                        kontor.ocr.extract.read_receipt(receipt)
            """,
        },
    )
    assert found == [("kontor/ocr/extract.py", 5, "BL002")], found


def test_class_based_task_and_aliased_soft_limit(tmp_path):
    """A Task subclass's run() is a task; an aliased SoftTimeLimitExceeded handler still counts."""
    found = _audit_sources(
        tmp_path,
        {
            "jobs.py": """
                from celery import Task
                from celery.exceptions import SoftTimeLimitExceeded as OutOfTime

                class ImportTask(Task):
                    soft_time_limit = 60

                    def run(self, rows):
                        for row in rows:
                            try:
                                row.save()
                            except Exception:
                                pass

                class SafeImportTask(Task):
                    def run(self, rows):
                        for row in rows:
                            try:
                                row.save()
                            except OutOfTime:
                                raise
                            except Exception:
                                pass
            """,
        },
    )
    assert found == [("jobs.py", 12, "BL002")], found


def test_soft_limit_handler_that_does_not_raise_does_not_protect(tmp_path):
    """An earlier `except SoftTimeLimitExceeded: pass` still leaves the loop running: reported."""
    found = _audit_sources(
        tmp_path,
        {
            "tasks.py": """
                from celery import shared_task
                from celery.exceptions import SoftTimeLimitExceeded

                @shared_task(soft_time_limit=60)
                def run(items):
                    for item in items:
                        try:
                            item.process()
                        except SoftTimeLimitExceeded:
                            pass
                        except Exception:
                            item.fail()
            """,
        },
    )
    assert found == [("tasks.py", 12, "BL002")], found


def test_reference_query_in_a_cached_function_called_per_item_is_fine(tmp_path):
    """A loop that calls an lru_cache function reading Category gives nothing; an uncached one does."""
    found = _audit_sources(
        tmp_path,
        {
            "pyproject.toml": REFERENCE_CATEGORY,
            "lookups.py": """
                import functools
                from kontor.models import Category

                @functools.cache
                def category_named(name):
                    return Category.objects.get(name=name)

                def category_named_uncached(name):
                    return Category.objects.get(name=name)

                def label_all(rows):
                    for row in rows:
                        row.category = category_named(row.hint)
                        row.backup = category_named_uncached(row.hint)
            """,
        },
    )
    assert found == [("lookups.py", 10, "BL004")], found


def test_pg_stat_read_twice_in_an_atomic_function(tmp_path):
    """A @transaction.atomic function calling a pg_stat reader twice is one transaction: reported."""
    found = _audit_sources(
        tmp_path,
        {
            "probe.py": """
                from django.db import connection, transaction

                def scans():
                    with connection.cursor() as cursor:
                        cursor.execute("SELECT sum(seq_scan) FROM pg_stat_user_tables")
                        return cursor.fetchone()[0]

                @transaction.atomic
                def measure(work):
                    before = scans()
                    work()
                    return scans() - before

                def measure_outside(work):
                    before = scans()
                    work()
                    return scans() - before
            """,
        },
    )
    assert found == [("probe.py", 13, "BL005")], found


def test_nothing_is_imported_or_run(tmp_path):
    """Auditing a module that would fail on import only reads it."""
    marker = tmp_path / "ran"
    found = _audit_sources(
        tmp_path,
        {
            "explode.py": f"""
                import pathlib
                pathlib.Path({str(marker)!r}).write_text("ran")
                raise SystemExit("imported")
            """,
        },
    )
    assert found == [] and not marker.exists(), "the audited module was executed"


def test_columns_count_characters_not_bytes(tmp_path):
    """On a line with umlauts before the query, the column still points at the model name."""
    source = (
        "def label(rows):\n"
        "    for row in rows:\n"
        '        row.hint = "Bürobedarf"; row.category = Category.objects.get(name=row.hint)\n'
    )
    (tmp_path / "labels.py").write_text(source, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(REFERENCE_CATEGORY), encoding="utf-8")
    [finding] = audit([str(tmp_path)]).findings
    line = source.splitlines()[2]
    rest = line[finding.column - 1 :]
    assert rest.startswith("Category"), f"column {finding.column} points at {rest!r}"


def test_walking_skips_virtualenvs_and_vendored_trees_but_not_a_named_one(tmp_path):
    """.venv, node_modules, site-packages and folders with a pyvenv.cfg are skipped below a path, not when named."""
    for folder in (".venv/lib", "node_modules/pkg", "lib/site-packages/pkg", "env"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "tasks.py").write_text(TASK_LOOP, encoding="utf-8")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    assert audit([str(tmp_path)]).findings == [], "files under skipped folders were audited"
    named = audit([str(tmp_path / "lib" / "site-packages")])
    assert [finding.code for finding in named.findings] == ["BL002"], "a site-packages path given by name was skipped"


def test_extensionless_shell_scripts_are_read(tmp_path):
    """A script without extension but with a shell #! line is a launch file."""
    (tmp_path / "start-worker").write_text(
        "#!/usr/bin/env bash\ncelery -A kontor worker --soft-time-limit ${SOFT_TIME_LIMIT:-120}\n", encoding="utf-8"
    )
    (tmp_path / "NOTES").write_text("celery -A k worker --soft-time-limit ${SOFT_TIME_LIMIT:-120}\n", encoding="utf-8")
    found = [(Path(finding.path).name, finding.code) for finding in audit([str(tmp_path)]).findings]
    assert found == [("start-worker", "BL001")], found



PG_HEADER = """\
import psycopg
from django.db import connection, transaction

SCANS = "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = %s"
CLEAR = "SELECT pg_stat_clear_snapshot()"
"""


@pytest.mark.parametrize(
    ("body", "expected_lines"),
    [
        (  # a reader on a connection of its own starts a fresh transaction on every call
            """
def sample(dsn):
    with psycopg.connect(dsn) as conn:
        return conn.execute(SCANS, ("books_category",)).fetchone()[0]

def measure(dsn, work):
    with transaction.atomic():
        before = sample(dsn)
        work()
        return sample(dsn) - before
""",
            [],
        ),
        (  # Django's connection with autocommit switched off is one long transaction
            """
def measure(cursor, work):
    transaction.set_autocommit(False)
    cursor.execute(SCANS, ["books_category"])
    work()
    cursor.execute(SCANS, ["books_category"])
""",
            [11],
        ),
        (  # a clear through a named constant, and a commit, both end the frozen snapshot
            """
def measure(dsn, work):
    conn = psycopg.connect(dsn)
    conn.execute(SCANS, ["a"])
    conn.execute(CLEAR)
    conn.execute(SCANS, ["a"])
    conn.commit()
    conn.execute(SCANS, ["a"])
""",
            [],
        ),
    ],
    ids=["own-connection-helper", "set-autocommit-false", "clear-and-commit"],
)
def test_pg_stat_transactions(tmp_path, body, expected_lines):
    """Which pg_stat reads share a frozen snapshot: own connections, manual transactions, clears and commits."""
    (tmp_path / "probe.py").write_text(PG_HEADER + body, encoding="utf-8")
    lines = [finding.line for finding in audit([str(tmp_path)]).findings]
    assert lines == expected_lines, f"BL005 on lines {lines}, expected {expected_lines}"


def test_a_named_file_of_another_kind_is_skipped_with_a_reason(tmp_path):
    """Naming a Markdown file gives no finding from its examples, and says why it was left out."""
    notes = tmp_path / "notes.md"
    notes.write_text("celery -A k worker --soft-time-limit ${SOFT_TIME_LIMIT:-120}\n", encoding="utf-8")
    result = audit([str(notes)])
    assert result.findings == [], "a Markdown file was read as a launch file"
    assert [skipped.reason for skipped in result.skipped] == ["not a Python or launch file"], result.skipped


def test_a_dangling_link_is_a_bl000_finding(tmp_path):
    """A file the walk meets but cannot open (a link to nothing) is a BL000 error, not a silent skip."""
    (tmp_path / "gone.py").symlink_to(tmp_path / "nowhere.py")
    result = audit([str(tmp_path)])
    assert [(finding.code, finding.severity) for finding in result.findings] == [("BL000", "error")], result.findings
    assert result.unread == 1 and "No such file" in result.findings[0].message, result.findings


def test_a_folder_that_cannot_be_listed_is_a_bl000_finding(tmp_path, monkeypatch):
    """When os.walk reports a folder it could not list, the audit reports it as BL000."""
    import os

    real_walk = os.walk

    def walk_with_one_failure(top, onerror=None, **options):
        onerror(PermissionError(13, "Permission denied", str(tmp_path / "private")))
        yield from real_walk(top, onerror=onerror, **options)

    monkeypatch.setattr(os, "walk", walk_with_one_failure)
    result = audit([str(tmp_path)])
    assert [finding.message for finding in result.findings] == ["Cannot list folder: Permission denied"], result.findings
    assert result.findings[0].path.endswith("private") and result.unread == 1, result.findings


CATCH_ALL_TASK = """\
from celery import shared_task

@shared_task{arguments}
def import_rows(rows):
    for row in rows:
        try:
            row.save()
        except Exception:
            row.fail()
"""


@pytest.mark.parametrize(
    ("arguments", "extra", "expected"),
    [
        ("", {}, []),
        ("(soft_time_limit=60)", {}, [("error", "limit: its decorator")]),
        ("", {"settings.py": "CELERY_TASK_SOFT_TIME_LIMIT = 300\n"}, [("warning", "limit: setting at settings.py:1")]),
        ("", {"settings.py": "CELERY_TASK_SOFT_TIME_LIMIT = None\n"}, []),
        (
            "",
            {"entrypoint.sh": "# Five minutes: the longest import anyone waits for.\n"
                              "celery -A kontor worker --soft-time-limit 300\n"},
            [("warning", "limit: worker flag at entrypoint.sh:2")],
        ),
    ],
    ids=["no-limit-anywhere", "decorator", "setting", "setting-none", "worker-flag"],
)
def test_bl002_ranks_by_the_soft_limit_it_found(tmp_path, arguments, extra, expected):
    """BL002 is an error under the task's own limit, a warning under a project-wide one, and absent without one."""
    (tmp_path / "tasks.py").write_text(CATCH_ALL_TASK.format(arguments=arguments), encoding="utf-8")
    for name, text in extra.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    findings = [finding for finding in audit([str(tmp_path)]).findings if finding.code == "BL002"]
    found = [(finding.severity, finding.message.rsplit("(", 1)[1].rstrip(")")) for finding in findings]
    assert found == expected, [finding.message for finding in findings]


RABBITMQ_PROJECT = """\
from celery import Celery

app = Celery("billing", broker="amqp://guest@localhost//")
app.conf.update(task_acks_late=True)


@app.task(time_limit=4 * 3600)
def close_year():
    return None
"""


def test_bl007_leaves_brokers_with_their_own_acknowledgements_alone(tmp_path):
    """A four-hour acks_late task on RabbitMQ is not reported: RabbitMQ does not redeliver to a live consumer."""
    (tmp_path / "billing.py").write_text(RABBITMQ_PROJECT)
    assert audit([str(tmp_path)]).findings == []
    (tmp_path / "billing.py").write_text(RABBITMQ_PROJECT.replace("amqp://guest@localhost//", "redis://cache:6379/1"))
    [finding] = audit([str(tmp_path)]).findings
    assert finding.code == "BL007" and "14400 s" in finding.message and "3600 s" in finding.message


def test_bl007_reads_the_timeout_from_conf_update_and_names_it(tmp_path):
    """A visibility timeout set through app.conf.update counts, and the finding names the configured number."""
    (tmp_path / "app.py").write_text(RABBITMQ_PROJECT.replace(
        "amqp://guest@localhost//", "redis://cache:6379/1").replace(
        "task_acks_late=True)", "task_acks_late=True, broker_transport_options={'visibility_timeout': 4 * 3600})"))
    [finding] = audit([str(tmp_path)]).findings
    assert "14400 s" in finding.message and "(visibility_timeout)" in finding.message


def test_bl008_ranks_a_swallowed_retry_as_an_error_and_the_waits_as_warnings(fixtures):
    """A retry a catch-all swallows runs the task twice (error); a wait that breaks a promise may (warning)."""
    for finding in audit([str(fixtures / "bad" / "lab8")]).findings:
        expected = "error" if finding.path.endswith("review.py") else "warning"
        assert finding.severity == expected, f"{finding.path}:{finding.line} is {finding.severity}: {finding.message}"


def test_bl008_names_the_total_the_default_and_what_refused(fixtures):
    """The autoretry task's findings say how long the work may take, whose delay it waits, and the refusal."""
    result = audit([str(fixtures / "bad" / "lab8" / "assistant.py")])
    messages = " | ".join(finding.message for finding in result.findings if finding.line == 11)
    for fragment in ("780 s after it is sent", "3 retries after Celery's default 180 s", "fresh 60 s time_limit",
                     "after RateLimitError, autoretry waits"):
        assert fragment in messages, f"{fragment!r} not in {messages!r}"


RETRYING_TASK = """\
import openai
from celery import shared_task


@shared_task(time_limit=60,
             autoretry_for=(openai.RateLimitError,))
def answer(question_id):
    return question_id
"""


def test_bl008_noqa_on_any_line_of_the_decorator(tmp_path):
    """`# noqa: BL008` on the decorator's last line silences both findings on it, the first reported at its first."""
    (tmp_path / "tasks.py").write_text(RETRYING_TASK)
    assert [finding.code for finding in audit([str(tmp_path)]).findings] == ["BL008", "BL008"]
    (tmp_path / "tasks.py").write_text(RETRYING_TASK.replace("RateLimitError,))", "RateLimitError,))  # noqa: BL008"))
    assert audit([str(tmp_path)]).findings == []


def test_bl008_is_quiet_on_the_alternatives_of_its_lab(tmp_path):
    """Each fix the lab's graders accept for the retry lab passes BL008 too."""
    from budgetlab import labs, variants

    root = Path(__file__).resolve().parents[2]
    lab = labs.get(RULES["BL008"].lab, root)
    alternatives = [variant for variant in variants.load(lab, root) if variant.kind == "alternative"]
    assert alternatives, f"lab {lab.number} declares no alternatives to check"
    for variant in alternatives:
        tree = variants.build(lab, variant, tmp_path, root)
        found = [f"{f.path}:{f.line} {f.message}" for f in audit([str(tree / lab.slug)]).findings if f.code == "BL008"]
        assert not found, f"alternative {variant.name} ({variant.why}) is reported:\n" + "\n".join(found)
