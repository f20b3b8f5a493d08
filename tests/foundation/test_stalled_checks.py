"""A check the grading plugin stops for running past its lab's limits fails with its sentence, as do the checks after it
that share its fixture."""

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
        time.sleep(600)  # a probe of lab code that never ends


    def test_first(batch):
        '''The first check that asks for the batch.'''


    def test_second(batch):
        '''The next check that asks for the same batch.'''


    def test_third():
        '''A check of its own, after them.'''
        try:
            time.sleep(600)
        except Exception:  # lab code's catch-all: the stop still ends the check
            pass
    """


def test_a_stopped_fixture_fails_every_check_that_shares_it_with_the_same_sentence(tmp_path):
    """A module fixture the stall alarm stops fails both of its checks with "was still running", never a bare
    AssertionError (pytest's own, when any other BaseException left its fixture cache half-written); a check whose
    code catches Exception is stopped too."""
    lab = labs.load()[0]
    folder = tmp_path / lab.slug
    folder.mkdir()
    (folder / "test_stalls.py").write_text(textwrap.dedent(GRADERS))
    report = tmp_path / "report.jsonl"
    # The stall alarm fires the lab's hard limit on the lab clock plus the margin after a check starts: well under a
    # second here.
    env = dict(os.environ, BUDGETLAB_CLOCK="0.00001", BUDGETLAB_STALL_MARGIN="0.5", PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
               **{checkreport.VARIABLE: str(report)})
    subprocess.run([sys.executable, "-m", "pytest", str(folder), "-p", "budgetlab.harness.grading",
                    "-p", "no:cacheprovider", "-q", "--tb=line", f"--rootdir={tmp_path}", "--noconftest"],
                   env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    results = {entry["title"]: entry for entry in map(json.loads, report.read_text().splitlines())
               if "outcome" in entry}
    assert sorted(results) == ["A check of its own, after them.", "The first check that asks for the batch.",
                               "The next check that asks for the same batch."], results
    first, second = results["The first check that asks for the batch."], results[
        "The next check that asks for the same batch."]
    assert first["outcome"] == second["outcome"] == "failed", results
    assert "«The first check that asks for the batch.» was still running" in first["symptom"], first
    assert second["symptom"] == first["symptom"], second
    third = results["A check of its own, after them."]
    assert third["outcome"] == "failed" and "«A check of its own, after them.» was still running" in third["symptom"], \
        third
