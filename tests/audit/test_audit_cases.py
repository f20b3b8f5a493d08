"""Cases met on code bases outside the project, each audited on its own: the findings they must give, or none.

Each folder under fixtures/cases is a small tree with one shape seen in a
real code base (issue 28): a name that only looks like Celery's setting, a
limit set for another app, a pool named through a variable, a queryset from
a helper. The table says every finding the folder gives, with a fragment its
message must hold; a folder with no entry must give none.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from budgetlab.audit import audit

# case -> [(file, line, code, fragment of the message)]
EXPECTED: dict[str, list[tuple[str, int, str, str]]] = {
    # Only Celery's own ways of setting the soft limit count.
    "serializer_field": [],
    "dict_key": [],
    "off_by_default": [],
    "django_project": [("billing/tasks.py", 9, "BL002", "setting at settings.py:3")],
    "app_conf": [("tasks.py", 9, "BL002", "setting at celery_app.py:4")],
    # A settings module reaches the tasks of its own app only.
    "two_apps": [("one/tasks.py", 9, "BL002", "setting at settings.py:3")],
    # The function that holds the loop is named, beside the task that runs it.
    "loop_holder": [("tasks.py", 7, "BL002", "loop at line 13 of `push_group`")],
    # A pool named through a variable: its shell default, a Dockerfile ENV, compose environment, a Helm value.
    "pool_default": [("worker.sh", 2, "BL006", "solo pool (the default of ${POOL:-solo})")],
    "pool_dockerfile_env": [("Dockerfile", 4, "BL006", "solo pool (WORKER_POOL_KIND set at Dockerfile:2)")],
    "pool_compose_env": [("docker-compose.yml", 6, "BL006", "threads pool (CELERY_POOL set at docker-compose.yml:5)")],
    "pool_helm_values": [("chart/templates/worker.yaml", 8, "BL006", "gevent pool (.Values.worker.pool at values.yaml:3)")],
    # A value the image sets wins over the script's fallback.
    "pool_env_prefork": [],
    # A loop over what a helper of the module returns is a loop over a queryset.
    "helper_queryset": [("tasks.py", 12, "BL003", "`for invoice in overdue_invoices()`")],
    # The loop's one call, on a model from apps.get_model, only queues a task per row: nothing to isolate.
    "get_model_enqueue": [],
    # Tasks made by a class-based decorator, called in place or through an instance, with its soft_time_limit.
    "class_decorator": [("tasks.py", 11, "BL002", "limit: its decorator"),
                        ("tasks.py", 17, "BL003", "task `close_stale`"),
                        ("tasks.py", 23, "BL003", "task `reopen_all`")],
    # A catch-all in a method of an object the task's loop calls.
    "method_in_loop": [("tasks.py", 8, "BL002", "`Importer.import_row`, run per item by task `import_rows`")],
    # A loop over .iterator() that only writes CSV rows does no per-row work.
    "csv_export": [],
    # A loop whose only write names no row (the job's own counter) and whose row work is queued.
    "job_bookkeeping": [],
    # With no reference-models: a model a data migration fills and application code never writes is reference
    # data; a model the application writes is not; ContentType's lookups are cached by Django; tests are skipped.
    "reference_inferred": [("books/tasks.py", 11, "BL004", "reference data `Currency` read inside a loop")],
    # A migration that copies rows from another table moves user data: it seeds nothing.
    "reference_copied": [],
    # The same models with no migration or seed script behind them: nothing is inferred.
    "reference_no_evidence": [],
    # A helper in another module raises Retry; the task's per-item catch-all, in a module that never says
    # "retry", swallows it.
    "retry_helper_elsewhere": [("billing/tasks.py", 11, "BL008", "its `task.retry()` at providers.py:10")],
    # Retry options from module-level dicts, through a decorator made once at the top of the module.
    "retry_options_dict": [("tasks.py", 10, "BL008", "fresh 60 s time_limit")],
    # Issue 42: values followed as a reviewer follows them. A loop over a local name bound to a queryset
    # yields rows of its model: their methods resolve, the catch-all in one is found and isolates the row.
    "queryset_name": [("hooks/models.py", 12, "BL002", "`HookLog.retry`, run per item by task `retry_failed_hooks`"),
                      ("hooks/tasks.py", 16, "BL003", "`for log in stale.order_by('pk').iterator()`")],
    # The same model reached through apps.get_model, bound to a name or called inline, never imported.
    "get_model_manager": [("hooks/models.py", 12, "BL002", "`HookLog.retry`, run per item by task"),
                          ("webhooks/tasks.py", 22, "BL003", "`for log in stale` in task `close_stale_hooks`")],
    # A helper isolates each item when its work goes to a helper with a catch-all, two calls down; three calls
    # down is past the depth, and a write the helper does itself is not isolated.
    "isolation_in_helpers": [("tasks.py", 41, "BL003", "task `send_digests_again`"),
                             ("tasks.py", 47, "BL003", "task `send_reminders`")],
    # A try around the whole loop still stops at the first row that raises; the message names it.
    "try_around_loop": [("tasks.py", 14, "BL003", "the `except Exception` at line 16 is around the whole loop")],
    # Reshaping in memory (through a helper) and writing CSV rows is no per-row work; a save is.
    "no_row_work_loop": [("tasks.py", 27, "BL003", "task `export_and_mark_orders`")],
    # A narrow except names one failure, and a catch-all that re-raises stops the loop: neither isolates;
    # the base class of a kind of I/O (OSError around a file write) names all its failures and does.
    "narrow_except": [("tasks.py", 34, "BL003", "task `charge_cards`"),
                      ("tasks.py", 44, "BL003", "task `charge_through_helper`"),
                      ("tasks.py", 56, "BL003", "task `charge_through_loud_helper`")],
    # Hard limits count: a pool that applies neither limit drops a hard limit set in the settings, with the
    # pool chosen by a shell default the Dockerfile sets again and by a Helm default, and the limit read from
    # the default of an environment schema.
    "pool_hard_limit": [
        ("chart/templates/worker.yaml", 8, "BL006",
         "solo pool (the default of {{ .Values.worker.pool | default 'solo' }}), which applies neither time limit: "
         "the hard limit of 43200 s (setting at settings.py:9) never applies"),
        ("docker/entrypoint.sh", 2, "BL006",
         "solo pool (POOL set at Dockerfile:2), which applies neither time limit: "
         "the hard limit of 43200 s (setting at settings.py:9) never applies"),
    ],
    # gevent applies the hard limit: with no soft limit declared, it drops nothing.
    "pool_hard_limit_gevent": [],
    # Limits from decorators and a worker flag; the message says which of the two each pool drops.
    "pool_decorator_limits": [
        ("worker.sh", 3, "BL006", "threads pool, which applies neither time limit: the soft limit of 45 s "
                                  "(task `answer_question`) and 3 hard limits (e.g. 600 s, task `export_ledger`) "
                                  "never apply"),
        ("worker.sh", 5, "BL006", "gevent pool, which applies only the hard limit: the soft limit of 45 s "
                                  "(task `answer_question`) never applies"),
    ],
    # Status codes read as ranges: every 5xx includes 503; a range below 429 includes no refusal.
    "retry_status_range": [
        ("tasks.py", 11, "BL008", "after HTTP 5xx (`response.status_code >= 500`), `self.retry()` waits "
                                  "countdown=10 * 2 ** self.request.retries with no random part, 5 retries at most "
                                  "(max_retries=5)"),
        ("tasks.py", 19, "BL008", "(`response.status_code in range(500, 600)`), `self.retry()` waits countdown=30 "
                                  "with no random part, 3 retries at most (Celery's default)"),
        ("tasks.py", 26, "BL008", "(`response.status_code // 100 == 5`), `self.retry()` waits countdown=30 with no "
                                  "random part, for ever (max_retries=None)"),
        ("tasks.py", 34, "BL008", "(`500 <= status < 600`)"),
    ],
    # retry_backoff applies to autoretry_for only: a retry by hand waits the fixed default_retry_delay.
    "retry_backoff_by_hand": [
        ("tasks.py", 12, "BL008", "`self.retry()` waits Celery's default 180 s (default_retry_delay) before every "
                                  "retry, for ever (max_retries=None): retry_backoff=True applies only to "
                                  "autoretry_for"),
        ("tasks.py", 21, "BL008", "waits default_retry_delay=20 before every retry, 4 retries at most (max_retries=4)"),
    ],
}

CASES = Path(__file__).parent / "fixtures" / "cases"
# Files several cases hold alike live once in cases/_shared: case -> {path in the case: shared file}.
_TASK = "catch_all_task.py"
_POOL = "pool_task.py"
_BOOKS = {"books/models.py": "books_models.py", "books/tasks.py": "books_tasks.py"}
SHARED: dict[str, dict[str, str]] = {
    "serializer_field": {"tasks.py": _TASK},
    "dict_key": {"tasks.py": _TASK},
    "off_by_default": {"tasks.py": _TASK},
    "django_project": {"billing/tasks.py": _TASK},
    "two_apps": {"one/tasks.py": _TASK, "two/tasks.py": _TASK},
    "pool_default": {"tasks.py": _POOL},
    "pool_dockerfile_env": {"tasks.py": _POOL},
    "pool_compose_env": {"tasks.py": _POOL},
    "pool_helm_values": {"tasks.py": _POOL},
    "pool_env_prefork": {"tasks.py": _POOL},
    "reference_inferred": _BOOKS,
    "reference_copied": _BOOKS,
    "reference_no_evidence": _BOOKS,
    "queryset_name": {"hooks/models.py": "hooks_models.py"},
    "get_model_manager": {"hooks/models.py": "hooks_models.py"},
}


def copy_case(case: str, root: Path) -> None:
    """Write the case's folder, with the shared files it holds, to root (benchmarks/audit_precision.py too)."""
    shutil.copytree(CASES / case, root)
    for inside, shared in SHARED.get(case, {}).items():
        shutil.copyfile(CASES / "_shared" / shared, root / inside)


def test_every_case_folder_has_an_entry():
    """A folder added without its expectation would pass whatever it gives."""
    folders = {path.name for path in CASES.iterdir() if path.is_dir() and path.name != "_shared"}
    assert folders == set(EXPECTED), f"folders without an entry: {sorted(folders - set(EXPECTED))}, " \
                                     f"entries without a folder: {sorted(set(EXPECTED) - folders)}"


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_case_gives_exactly_its_findings(tmp_path, case):
    """The case's folder, audited alone with no configuration, gives the expected findings and no other."""
    root = tmp_path / case
    copy_case(case, root)
    result = audit([str(root)])
    found = sorted(
        (Path(f.path).resolve().relative_to(root.resolve()).as_posix(), f.line, f.code, f.message)
        for f in result.findings
    )
    expected = sorted(EXPECTED[case])
    assert [item[:3] for item in found] == [item[:3] for item in expected], f"{case}: got {found}"
    for (_, _, _, message), (_, _, _, fragment) in zip(found, expected):
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"
