"""The registry of what the lab clock leaves on wall time spots each seam where lab code writes it, and only there.

The same registry makes the lab-clock page's list and the note a failed
check adds, so a learner reads one story in both places.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from budgetlab.harness import grading
from budgetlab.inworker import seams

ROOT = Path(__file__).resolve().parents[2]

SOURCE = '''"""A docstring may say 'now'::timestamptz, statement_timeout or st_mtime: it is no code."""
import os
import threading
import time

lock = threading.Lock()
held = threading.RLock()


def claim(cursor, upload_id):
    """CURRENT_TIMESTAMP inside a function body: $$ CURRENT_DATE $$ here is prose, too."""
    cursor.execute("UPDATE upload SET started_at = 'now'::timestamptz "  # statement_timeout in a comment
                   "WHERE id = %s", [upload_id])
    cursor.execute("SET lock_timeout = '5s'")
    cursor.execute("CREATE FUNCTION stamp() RETURNS timestamptz LANGUAGE sql AS $$ SELECT CURRENT_TIMESTAMP $$")
    lock.acquire(timeout=3)
    held.acquire(timeout=3)
    words = {'now': 1, "today": 2}
    return os.path.getmtime("x"), time.process_time(), words
'''


def _found(tmp_path: Path, source: str = SOURCE, name: str = "tasks.py") -> list[tuple[int, str]]:
    path = tmp_path / name
    path.write_text(source)
    return [(use.line, use.found) for use in seams.uses(path)]


def test_each_seam_is_found_on_its_line_in_code_and_sql_never_in_docstrings_comments_or_plain_words(tmp_path):
    """SQL seams are looked for in string literals, Python ones in code; a docstring, a comment or a dict key is neither."""
    assert _found(tmp_path) == [(12, "now"), (14, "lock_timeout"), (15, "CURRENT_TIMESTAMP"),
                                (16, "Lock.acquire(timeout=...)"), (19, "getmtime"), (19, "process_time")]


def test_an_rlock_or_a_semaphore_waits_on_the_lab_clock_and_is_not_named(tmp_path):
    """Only a name bound to threading.Lock() or _thread.allocate_lock() makes acquire(timeout=...) a seam."""
    source = ("import threading\nsemaphore = threading.Semaphore()\nsemaphore.acquire(timeout=1)\n"
              "import _thread\nraw = _thread.allocate_lock()\nraw.acquire(True, 2)\n")
    assert _found(tmp_path, source) == [(6, "Lock.acquire(timeout=...)")]


def test_a_shell_script_s_sleep_and_timeout_are_seams_but_not_their_mention(tmp_path):
    source = "#!/bin/sh\nsleep 5  # waits\necho 'timeout 3 is only a word'\nready && timeout 600 celery worker\n"
    assert _found(tmp_path, source, "entrypoint.sh") == [(2, "sleep"), (4, "timeout")]


def test_the_note_names_file_and_lines_together_and_what_runs_on_the_lab_clock(tmp_path):
    """The brief's example, as a check prints it: one file, its lines, the seam, its clock and the covered way."""
    path = tmp_path / "uploads.py"
    path.write_text('SQL = ("UPDATE t SET at = \'now\'::timestamptz "\n       "WHERE at < \'now\'::timestamptz")\n')
    assert seams.note([path], lambda shown: shown.name) == (
        "uploads.py:1, 2 reads the 'now' literal, which runs on the database's wall clock here; now() runs on the "
        "lab clock")
    assert seams.note([tmp_path / "missing.py"]) == ""


def test_a_failed_check_s_note_reads_the_learner_s_files_only(tmp_path):
    """The read-only files (the workshop's own) are left out; files the learner added are read."""
    (tmp_path / "uploads.py").write_text("import os\nos.stat('x').st_mtime\n")
    (tmp_path / "client.py").write_text("import os\nos.stat('x').st_mtime\n")
    (tmp_path / "extra.py").write_text("import time\ntime.thread_time()\n")
    said = grading.seam_note(tmp_path, ("client.py",))
    assert "extra.py:2 reads thread_time()" in said and "uploads.py:2 reads a file's time (st_mtime)" in said, said
    assert "client.py" not in said, said


def test_the_lab_clock_page_lists_the_registry():
    """docs/concepts/lab-clock.md holds the marker; its hook puts every registered seam there."""
    page = (ROOT / "docs" / "concepts" / "lab-clock.md").read_text()
    spec = importlib.util.spec_from_file_location("wall_seams_hook", ROOT / "docs" / "hooks" / "wall_seams.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert hook.MARKER in page
    rendered = hook.on_page_markdown(page, None, None, None)
    for seam in seams.SEAMS:
        assert f"- {seam.name}: on {seam.clock}; {seam.instead}" in rendered, seam.name
