"""A check the grading plugin stops for running past its lab's limits fails with its sentence, and the checks after it
are reported as not run instead of each waiting as long for the same code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from budgetlab import labs
from budgetlab.harness import checkreport

GRADERS = """
    import time

    import pytest


    @pytest.fixture(scope="module")
    def batch():
        try:
            time.sleep(600)  # a probe of lab code that never ends
        except Exception:  # lab code's catch-all: the stop still ends the check
            pass


    def test_first(batch):
        '''The first check that asks for the batch.'''


    def test_second(batch):
        '''The next check that asks for the same batch.'''


    def test_third():
        '''A check of its own, after them.'''
        time.sleep(600)
    """


def test_a_stalled_check_fails_with_its_sentence_and_the_rest_are_reported_as_not_run(tmp_path):
    """The first check the stall alarm stops, inside a shared fixture whose code catches Exception, fails with "was still
    running"; pytest stops there (exit 1) and the two checks after it are reported as not run, naming it, instead
    of each waiting out the alarm (or failing on a bare AssertionError from pytest's half-written fixture cache)."""
    lab = labs.load()[0]
    folder = tmp_path / lab.slug
    folder.mkdir()
    (folder / "test_stalls.py").write_text(textwrap.dedent(GRADERS))
    report = tmp_path / "report.jsonl"
    # The stall alarm fires the lab's hard limit on the lab clock plus the margin after a check starts: well under
    # a second here.
    env = dict(os.environ, BUDGETLAB_CLOCK="0.00001", BUDGETLAB_STALL_MARGIN="0.5", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               **{checkreport.VARIABLE: str(report)})
    ran = subprocess.run([sys.executable, "-m", "pytest", str(folder), "-p", "budgetlab.harness.grading",
                          "-p", "no:cacheprovider", "-q", "--tb=line", f"--rootdir={tmp_path}", "--noconftest"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    results = [entry for entry in map(json.loads, report.read_text().splitlines()) if "outcome" in entry]
    titles = [entry["title"] for entry in results]
    assert titles == ["The first check that asks for the batch.", "The next check that asks for the same batch.",
                      "A check of its own, after them."], results
    first, *rest = results
    assert first["outcome"] == "failed", first
    assert "«The first check that asks for the batch.» was still running" in first["symptom"], first
    for entry in rest:
        assert (entry["outcome"], entry["could_not_grade"]) == ("failed", False), entry
        assert entry["symptom"] == ("not run: the checks stopped after «The first check that asks for the batch.», "
                                    "whose code never returned"), entry
