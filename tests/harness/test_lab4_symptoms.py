"""Lab 4's symptoms say only what its checks observed: each sentence family read from a state built by hand.

The checks that read the probe's report are called with a report written
here, as the probe would print it; the rest are read from the plain values
the checks pass in. No stack: nothing here connects to a server.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pytest

from budgetlab.scenarios.lab4 import BatchFigures, findings
from budgetlab.stories.lab4 import SLUG

from .graders import loaded


@pytest.fixture(scope="module")
def graders():
    """The lab's grader module, whose `say` builds its sentences."""
    with loaded(SLUG, "test_reference_cache.py") as module:
        yield module


def _said(check, *args) -> str:
    with pytest.raises(AssertionError) as failed:
        check(*args)
    return str(failed.value).split("\nassert ")[0]


def _invalidated(before=None, saved=None, created=None, deleted=None) -> dict:
    """The probe's report of its ORM phase: by default what a correct cache shows."""
    return {"invalidate": {
        "before": {"category": "Miete", "table": "Miete", "listed_4250": True, **(before or {})},
        "saved": {"category": "Miete und Pacht", "table": "Miete und Pacht", "match": "4210", **(saved or {})},
        "created": {"listed": True, "match": "4215", **(created or {})},
        "deleted": {"listed": False, "match": None, **(deleted or {})}}}


def test_a_renamed_category_is_still_stale_only_when_its_old_name_was_seen(graders):
    """'still said' needs the name seen before the rename; another answer is quoted as it came."""
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(saved={"category": "Miete"}))
    assert said == ("after category 4210 was renamed 'Miete und Pacht' through the ORM, category('4210') in the "
                    "same process still said 'Miete'"), said
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(saved={"category": "CORRUPTED"}))
    assert "category('4210') in the same process said 'CORRUPTED'" in said and "still" not in said, said


def test_a_renamed_category_missing_from_the_table_is_never_said_to_be_listed(graders):
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(saved={"table": None}))
    assert said.endswith("category_table() in the same process no longer listed it"), said
    said = _said(graders.test_saved_category_shows_in_next_lookup,
                 _invalidated(before={"table": None}, saved={"table": None}))
    assert said.endswith("category_table() in the same process did not list it"), said
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(saved={"table": "Miete"}))
    assert said.endswith("still listed it as 'Miete'"), said


def test_a_new_keyword_and_a_new_category_are_quoted_as_answered(graders):
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(saved={"match": None}))
    assert said.endswith("category_for('pacht') answered None"), said
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(created={"listed": False}))
    assert said.endswith("category 4215 was created through the ORM, the same process did not list it"), said
    said = _said(graders.test_saved_category_shows_in_next_lookup, _invalidated(created={"match": "4100"}))
    assert said.endswith("the same process matched farmland to '4100'"), said


def test_a_deleted_category_is_still_listed_only_when_it_was_listed_before(graders):
    said = _said(graders.test_deleted_category_disappears_from_next_lookup, _invalidated(deleted={"listed": True}))
    assert said.endswith("category_table() in the same process still listed it"), said
    said = _said(graders.test_deleted_category_disappears_from_next_lookup,
                 _invalidated(before={"listed_4250": False}, deleted={"listed": True}))
    assert said.endswith("category_table() in the same process listed it"), said
    said = _said(graders.test_deleted_category_disappears_from_next_lookup, _invalidated(deleted={"match": "4250"}))
    assert said.endswith("category_for('cleaning janitor') in the same process answered '4250'"), said


def test_a_phase_that_raised_is_named_by_what_it_was_doing(graders):
    """The ORM phase raising in the learner's receiver is not 'the lookups raised'."""
    report = {"invalidate_error": "ValueError: no sender (categories.py:12)"}
    said = _said(graders.test_deleted_category_disappears_from_next_lookup, report)
    assert said == ("saving, creating and deleting categories through the ORM and asking the lookups again raised "
                    "ValueError: no sender (categories.py:12)"), said
    said = _said(graders.test_outputs_match_uncached_lookups, {"batch_error": "KeyError: '4210' (categories.py:30)"})
    assert said == (f"{graders.BATCH} in one process raised KeyError: '4210' (categories.py:30)"), said


def test_the_import_and_the_batch_are_counted_apart(graders):
    """A process that read the table while importing and once in the batch: both counts, each where it was made."""
    said = _said(graders.test_batch_reads_category_table_once_per_process,
                 {"batch_queries": 1, "scans": 1, "import_scans": 1})
    assert said == (f"{graders.BATCH} in one process queried the category table once (Django's query log), and "
                    "PostgreSQL counted 1 read of it during the batch and 1 while the process imported "
                    "lab4_extraction_batch.tasks before it"), said
    said = _said(graders.test_batch_reads_category_table_once_per_process,
                 {"batch_queries": 600, "scans": 600, "import_scans": 0})
    assert said.endswith("queried the category table 600 times (Django's query log), and PostgreSQL counted 600 "
                         "reads of it during the batch"), said
    graders.test_batch_reads_category_table_once_per_process({"batch_queries": 1, "scans": 1, "import_scans": 0})
    said = _said(graders.test_importing_reads_no_categories, {"import_queries": 1})
    assert "queried the category table once before any document arrived" in said, said


def test_a_change_that_reached_the_next_call_names_only_the_changes_that_went_through(graders):
    say = graders.say
    before = {"table": [("4210", "Miete", "Raumkosten")], "rent": "Miete", "match": "4210"}
    after = {"table": [("4210", "CORRUPTED", "Raumkosten")], "rent": "CORRUPTED", "match": "4210"}
    changed = say.changes(before, after)
    assert changed == ["row 1 of category_table() is now ('4210', 'CORRUPTED'), was ('4210', 'Miete')",
                       "category('4210').name is now 'CORRUPTED', was 'Miete'"], changed
    said = _said(graders.test_callers_cannot_change_what_the_next_caller_gets,
                 {"mutate": {"attempted": ["renamed a row"], "changed": changed}})
    assert said == ("a caller changed what the lookups returned it (renamed a row), and the next call answered "
                    "otherwise: row 1 of category_table() is now ('4210', 'CORRUPTED'), was ('4210', 'Miete')"), said
    # Nothing went through, yet the answers moved: the sentence does not blame a caller's change.
    said = _said(graders.test_callers_cannot_change_what_the_next_caller_gets,
                 {"mutate": {"attempted": [], "changed": ["category_table() now has 35 rows, not 36"]}})
    assert said.startswith("every change a caller tried on what the lookups returned it was refused, yet the next "
                           "call answered otherwise: category_table() now has 35 rows"), said
    assert say.changes(before, dict(before)) == []


@dataclass(frozen=True)
class Extraction:
    category_code: str | None
    vat_rate: Decimal | None
    text: str


def test_an_output_that_differs_is_shown_where_it_first_differs(graders):
    say = graders.say
    want = (Extraction("4210", Decimal("19.00"), "Miete"), "Choose\nVAT 19.00 %")
    assert say.first_difference(want, (Extraction("4210", Decimal("7.00"), "Miete"), want[1])) == \
        "the extraction's vat_rate is Decimal('7.00'), uncached Decimal('19.00')"
    assert say.first_difference(want, (want[0], "Choose\nVAT 19.0 %")) == \
        "prompt line 2 is 'VAT 19.0 %', uncached 'VAT 19.00 %'"
    assert say.first_difference("a\nb", "a") == "the prompt has 1 lines, uncached 2"
    # Same lines, other text (a trailing newline): the sentence never says the line counts differ.
    assert say.first_difference("a\nb", "a\nb\n") == "the prompt is 'a\\nb\\n', uncached 'a\\nb'"
    assert say.first_difference("a", None) == "the prompt is None, uncached 'a'"
    said = _said(graders.test_outputs_match_uncached_lookups,
                 {"compare": {"different": 3, "items": 180, "first": ["transaction 7", "prompt line 2 is 'x'"]}})
    assert said == "3 of 180 items differ from the uncached lookups' output; first, transaction 7: prompt line 2 is 'x'"


def test_the_worker_sentences_name_the_processes_the_log_showed(graders):
    """'busy processes' only when the log showed them; the queries are the total and the most in one process."""
    say = graders.say
    batch = say.batch(60, 120)
    seen = say.worker(20, 2, 2)
    assert say.worker_queries(batch, seen, {101: 120, 102: 118}) == (
        f"{batch}, run as 20 tasks on a worker whose log shows 2 of its 2 processes running them, queried the "
        "category table 238 times while categorising documents, 120 times in one process (Django's query log in "
        "each process)")
    unseen = say.worker(20, 0, 2)
    assert unseen == "as 20 tasks on a worker of 2 processes", unseen
    assert say.worker_reads(batch, unseen, 5) == (
        f"PostgreSQL counted 5 reads of the category table while {batch} ran as 20 tasks on a worker of 2 processes")
    assert say.unfinished(3, 20, 60) == "3 of 20 tasks sent no result within 60 s wall"
    assert say.failed(1, 20, "KeyError('4210')") == "1 of 20 tasks failed on the worker: KeyError('4210')"
    assert say.probe_ended(-9, "Killed") == \
        "the check's batch process ended with exit status -9 before it reported: Killed"


def test_a_batch_that_never_ends_is_named_by_what_its_process_showed(graders):
    """The probe past its deadline: its CPU time says whether it computed or waited, its stack the line it was on;
    neither is claimed where /proc could not say it, and a machine that kept it from a core is named instead."""
    say = graders.say
    batch = say.batch(60, 120)
    where = ("labs/lab4_extraction_batch/categories.py", 62, "category_table")
    assert say.probe_unfinished(batch, 30.2, 0.3, False, where) == (
        f"{batch} in one process had not finished after 30 s wall, having used 0.3 s of CPU (waiting most of that "
        "time); it was at labs/lab4_extraction_batch/categories.py:62 (in category_table) when the check stopped it")
    assert say.probe_unfinished(batch, 30.0, 29.1, True, None) == (
        f"{batch} in one process had not finished after 30 s wall, having used 29.1 s of CPU (computing most of "
        "that time)")
    assert say.probe_unfinished(batch, 30.0, None, None, where).endswith(
        "had not finished after 30 s wall; it was at labs/lab4_extraction_batch/categories.py:62 (in category_table) "
        "when the check stopped it")
    assert say.probe_kept(batch, 31.0, 19.6) == (
        f"{batch} in one process had not finished after 31 s wall, 20 s of which the machine kept it waiting for a "
        "core")


def _figures(scans: int, import_queries: int = 0) -> BatchFigures:
    return BatchFigures(rows=2500, wall_seconds=2.91, lookup_seconds=2.70, lookup_calls=8000, queries=scans,
                        category_queries=scans, import_queries=import_queries, scans=scans, rows_read=scans * 36)


def test_the_runs_findings_claim_only_the_counts_and_the_average():
    """`run`'s closing sentences: PostgreSQL's count while the process ran, and an average lookup, nothing more."""
    said = findings(_figures(8000))
    assert said == ["A lookup took 0.34 ms on average, nothing a profile of one document would flag. But PostgreSQL "
                    "counted 8,000 scans of a table that only a migration changes while the batch process ran, and "
                    "the lookups took 2.70 s of its 2.91 s."], said
    assert findings(_figures(1))[-1].startswith("PostgreSQL counted one scan of the category table while the batch "
                                                "process ran 2,500 rows; the lookups took 2700 ms in all")
    assert findings(_figures(0))[-1].startswith("PostgreSQL counted no scan of the category table")
    said = findings(_figures(1, import_queries=1))
    assert said[0] == (f"[yellow]Importing {SLUG}.tasks, as a worker does at start-up, queried the category table "
                       "once[/] before the batch began."), said
