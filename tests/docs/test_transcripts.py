"""Command transcripts on the site come from real runs, and a stale one fails the suite."""

from __future__ import annotations

import re
import sys

import pytest
from docs_support import DOCS, load_module

from budgetlab.harness.grading import AGAIN_WITHOUT_VERDICT

INCLUDE = re.compile(r"""--8<--\s+["']transcripts/([^"']+)\.txt["']""")


transcripts = load_module("scripts/transcripts.py")


@pytest.mark.parametrize("entry", transcripts.TRANSCRIPTS, ids=lambda entry: entry.name)
def test_stored_transcript_matches_a_fresh_run(entry):
    """Re-running the command prints what the docs page shows, up to the values its masks name."""
    reason = transcripts.unavailable_reason(entry)
    if reason:
        pytest.skip(reason)
    assert transcripts.path_for(entry).exists(), (
        f"docs/transcripts/{entry.name}.txt is missing; run `python scripts/transcripts.py {entry.name}`"
    )
    diff = _compared(entry)
    assert diff is None, (
        f"docs/transcripts/{entry.name}.txt no longer matches `{' '.join(entry.command)}`; "
        f"run `python scripts/transcripts.py {entry.name}` and review:\n{diff}"
    )


# A line the fresh run added that says the machine kept a check, or the whole check, from grading (a
# transcript's masks may fold its whole output into one line, so anywhere in it).
MACHINES_VERDICT = re.compile(r"^\+(?!\+\+ ).*could not grade", re.MULTILINE)


def _compared(entry, *folder):
    """Compare a fresh run; a check that says the machine kept it from grading gave no verdict: run it again, up to
    AGAIN_WITHOUT_VERDICT times more, and the last run counts.

    A whole check that could not grade exits 2, which a transcript expecting
    0 or 1 reports as an error rather than as a diff (rehearsal of
    2026-12-06: lab8-check-starter, "the rush never came (is the machine
    very busy?)"); a single check that could not grade beside failed ones
    says so on its own line of the diff (a later rehearsal: twice in a row).
    """
    for _ in range(AGAIN_WITHOUT_VERDICT):
        try:
            diff = transcripts.compare(entry, *folder)
        except transcripts.TranscriptError as exc:
            if "could not grade" not in str(exc):
                raise
            continue
        if not (diff and MACHINES_VERDICT.search(diff)):
            return diff
    return transcripts.compare(entry, *folder)


def test_every_included_transcript_has_a_table_entry():
    """A page includes only transcripts that scripts/transcripts.py knows how to regenerate."""
    known = {entry.name for entry in transcripts.TRANSCRIPTS}
    unknown = sorted(
        f"{page.relative_to(DOCS)}: {name}"
        for page in DOCS.rglob("*.md")
        for name in INCLUDE.findall(page.read_text(encoding="utf-8"))
        if name not in known
    )
    assert not unknown, "pages include transcripts that no table entry produces:\n" + "\n".join(unknown)


def test_no_stored_transcript_is_orphaned():
    """Every file in docs/transcripts/ belongs to a table entry, so none is edited by hand and forgotten."""
    known = {entry.name for entry in transcripts.TRANSCRIPTS}
    stored = {path.stem for path in transcripts.TRANSCRIPT_DIR.glob("*.txt")}
    assert not stored - known, f"transcripts without a table entry: {sorted(stored - known)}"


def test_table_entries_have_unique_names():
    """Two entries never write the same file."""
    names = [entry.name for entry in transcripts.TRANSCRIPTS]
    assert len(names) == len(set(names)), f"duplicate transcript names: {names}"


def _python_entry(name, code, **options):
    return transcripts.Transcript(name, (sys.executable, "-c", code), **options)


def test_a_recorded_transcript_starts_with_the_command_and_matches_again(tmp_path):
    """Writing then comparing the same deterministic command reports no drift."""
    entry = _python_entry("demo", "print('processed=571 failed=20')")
    written = transcripts.write(entry, tmp_path)
    text = written.read_text(encoding="utf-8")
    assert text.startswith("$ "), "a transcript opens with the command line, as a terminal shows it"
    assert text.endswith("processed=571 failed=20\n")
    assert transcripts.compare(entry, tmp_path) is None


def test_changed_output_is_reported_as_a_diff(tmp_path):
    """When the command now prints something else, compare returns a diff naming both versions."""
    transcripts.write(_python_entry("demo", "print('processed=571 failed=20')"), tmp_path)
    diff = transcripts.compare(_python_entry("demo", "print('processed=591 failed=0')"), tmp_path)
    assert diff is not None, "drift went unnoticed"
    assert "-processed=571 failed=20" in diff and "+processed=591 failed=0" in diff


def test_masks_hide_values_that_change_between_runs(tmp_path):
    """A masked PID or duration does not count as drift, and the page still shows the recorded values."""
    code = "import os, time; print(f'worker pid={os.getpid()} took {time.perf_counter():.3f} s')"
    entry = _python_entry("demo", code, masks=((r"pid=\d+", "pid=<pid>"), (r"\d+\.\d+ s", "<n> s")))
    transcripts.write(entry, tmp_path)
    stored = (tmp_path / "demo.txt").read_text(encoding="utf-8")
    assert re.search(r"worker pid=\d+ took \d+\.\d{3} s", stored), f"the stored run lost its values:\n{stored}"
    assert transcripts.compare(entry, tmp_path) is None


def test_a_mask_does_not_hide_a_change_it_was_not_written_for(tmp_path):
    """Masking the duration still reports a changed count next to it."""
    masks = ((r"\d+\.\d+ s", "<n> s"),)
    transcripts.write(_python_entry("demo", "print('3 of 40 files in 1.25 s')", masks=masks), tmp_path)
    diff = transcripts.compare(_python_entry("demo", "print('4 of 40 files in 2.50 s')", masks=masks), tmp_path)
    assert diff is not None and "+4 of 40 files in <n> s" in diff, diff


def test_an_unordered_entry_ignores_the_order_of_racing_lines_but_not_their_words(tmp_path):
    """Two events of the same millisecond may swap; a word that changes is still drift."""
    first = "print('timeline'); print('import job soft limit'); print('bulk upload soft limit'); print(); print('end')"
    swapped = "print('timeline'); print('bulk upload soft limit'); print('import job soft limit'); print(); print('end')"
    changed = "print('timeline'); print('bulk upload hard limit'); print('import job soft limit'); print(); print('end')"
    transcripts.write(_python_entry("demo", first, unordered=True), tmp_path)
    assert transcripts.compare(_python_entry("demo", swapped, unordered=True), tmp_path) is None
    assert transcripts.compare(_python_entry("demo", changed, unordered=True), tmp_path) is not None
    assert transcripts.compare(_python_entry("demo", swapped), tmp_path) is not None, "only unordered entries forgive order"


def test_a_childs_ending_matches_wherever_the_line_wraps():
    """lab2-run-starter: a child's ending wraps where its PID's width puts the break, and either ending may come."""
    entry = next(entry for entry in transcripts.TRANSCRIPTS if entry.name == "lab2-run-starter")
    stored = (DOCS / "transcripts" / "lab2-run-starter.txt").read_text()
    reaped = re.compile(r"(ForkPoolWorker-\d) \(pid \d+\):\s+(killed\s+by\s+SIGKILL|ended\s+by\s+the\s+SIGTERM\s+\([^)]*\))")
    assert len(reaped.findall(stored)) >= 2, "the stored run shows fewer than two children's endings"
    endings = iter(["killed\n                            by SIGKILL", "ended by the SIGTERM\n                            (exitcode 15)"] * 3)
    fresh = reaped.sub(lambda match: f"{match[1]} (pid 1234567): {next(endings)}", stored)
    assert fresh != stored
    assert transcripts.comparable(fresh, entry) == transcripts.comparable(stored, entry)


def test_the_checkout_path_is_shown_as_a_readers_clone(tmp_path):
    """A transcript never carries the folder of the machine that recorded it."""
    code = f"print({str(transcripts.ROOT / '.budgetlab' / 'logs' / 'run-1.log')!r})"
    transcripts.write(_python_entry("demo", code), tmp_path)
    assert (tmp_path / "demo.txt").read_text(encoding="utf-8").endswith("~/budgetlab/.budgetlab/logs/run-1.log\n")


def test_an_unexpected_exit_status_is_an_error(tmp_path):
    """A command that fails when it should succeed is not silently recorded."""
    with pytest.raises(transcripts.TranscriptError, match="exited 3, expected 0"):
        transcripts.write(_python_entry("demo", "raise SystemExit(3)"), tmp_path)
    assert not (tmp_path / "demo.txt").exists()


def test_an_unknown_subcommand_is_reported_unavailable():
    """An entry for a command the CLI does not have yet is skipped with a reason, not failed."""
    entry = transcripts.Transcript("future", ("budgetlab", "no-such-command-yet"))
    reason = transcripts.unavailable_reason(entry)
    assert reason and "no-such-command-yet" in reason


def console_blocks(text: str) -> list[list[str]]:
    """Return the non-blank lines of every ```console fence in a Markdown page."""
    blocks, body, indent = [], None, ""
    for line in text.splitlines():
        if body is None:
            opening = re.match(r"^(\s*)```console\s*$", line)
            if opening:
                body, indent = [], opening.group(1)
        elif re.match(rf"^{indent}```\s*$", line):
            blocks.append(body)
            body = None
        elif line.strip():
            body.append(line.strip())
    return blocks


# Pages not yet converted, each with its reason; remove an entry once its page includes transcripts only.
PASTED_OUTPUT_ALLOWED = {
    # Shortened excerpts of `budgetlab audit` ("[...]"), owned by the audit's own work.
    "audit.md",
}


def test_console_output_on_a_page_is_always_an_included_transcript():
    """A console block shows typed commands or includes a recorded transcript; output is never pasted."""
    pasted = sorted(
        f"{page.relative_to(DOCS)}: {line}"
        for page in DOCS.rglob("*.md")
        if str(page.relative_to(DOCS)) not in PASTED_OUTPUT_ALLOWED
        for block in console_blocks(page.read_text(encoding="utf-8"))
        for line in block
        if not line.startswith(("--8<--", "$ "))
    )
    assert not pasted, "console output pasted into pages instead of recorded by scripts/transcripts.py:\n" + "\n".join(pasted)


def test_console_blocks_are_found_with_their_pasted_lines():
    """The fence reader sees indented fences and the output lines inside them."""
    page = '??? note\n\n    ```console\n    $ budgetlab run 1\n    ready in 1.6 s\n    ```\n\n```console\n--8<-- "x.txt"\n```\n'
    assert console_blocks(page) == [["$ budgetlab run 1", "ready in 1.6 s"], ['--8<-- "x.txt"']]


def _counting_entry(name, tmp_path, then):
    """A transcript entry whose command knows its run's number, n (0 the first), and does `then` with it."""
    runs = tmp_path / "runs"
    return _python_entry(name, f"import pathlib, sys; p = pathlib.Path({str(runs)!r}); "
                               f"n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); {then}")


def test_a_check_that_could_not_grade_is_run_again_and_its_last_verdict_compared(tmp_path):
    """Exit 2 is no verdict, up to AGAIN_WITHOUT_VERDICT times more; the last exit 2, or any other error, fails."""
    again = AGAIN_WITHOUT_VERDICT
    # Run 0 is recorded; the first comparison's runs 1 to `again` cannot grade and the next one can; every run of the
    # second comparison, `again` + 1 of them, cannot grade.
    ungraded = [*range(1, again + 1), *range(again + 2, 2 * again + 3)]
    entry = _counting_entry("ungraded", tmp_path, "sys.exit(print('could not grade: the rush never came') or 2) "
                                                  f"if n in {ungraded} else print('ok')")
    transcripts.write(entry, tmp_path)
    assert _compared(entry, tmp_path) is None
    with pytest.raises(transcripts.TranscriptError, match="exited 2"):
        _compared(entry, tmp_path)


def test_a_single_check_that_could_not_grade_beside_failed_ones_is_run_once_more(tmp_path):
    """A check line saying the machine kept that check from grading (exit 1, others failed) is no verdict either."""
    entry = _counting_entry("one-ungraded", tmp_path,
                            "print('  x a check\\n      could not grade: the rush never came' if n == 1 else '  x a check')")
    transcripts.write(entry, tmp_path)  # run 0
    assert _compared(entry, tmp_path) is None  # run 1: one check could not grade; run 2 as recorded


def test_a_could_not_grade_inside_a_folded_transcript_line_is_the_machines_verdict():
    """A transcript whose masks fold its output into one line still shows a check that could not grade."""
    folded = "--- t.txt (stored)\n+++ budgetlab check N (now)\n@@ -1 +1 @@\n-$ x ✗ a check. ✓ b\n" \
             "+$ x ✗ a check. could not grade: the rush never came ✓ b\n"
    assert MACHINES_VERDICT.search(folded)
    assert not MACHINES_VERDICT.search(folded.replace("could not grade: ", ""))


def test_the_lab8_starter_transcript_compares_which_checks_fail_not_what_each_saw():
    """A busy machine's afternoon changes which of the starter's faults each check meets first (rehearsals: a retry
    run past its deadline, a retry run after its question ended, a review still running); a check that passes or
    could not grade is still a difference."""
    entry = next(entry for entry in transcripts.TRANSCRIPTS if entry.name == "lab8-check-starter")

    def output(mark: str, saw: str) -> str:
        return f"$ budgetlab check 8\n  {mark} A check of lab 8.\n      {saw}\n1 of 8 hidden checks passed\n"

    quiet = output("✗", "17 of 31 questions: question 24 was still 'running', and another attempt of it was queued")
    busy = output("✗", "17 of 31 questions: question 24 had ended 'succeeded', then an attempt of it ran again")
    assert transcripts.normalise(quiet, entry.masks) == transcripts.normalise(busy, entry.masks)
    assert transcripts.normalise(quiet, entry.masks) != transcripts.normalise(output("✓", ""), entry.masks)
    unmeasured = transcripts.normalise(output("✗", "could not grade: the rush never came"), entry.masks)
    assert "could not grade: the rush never came" in unmeasured
