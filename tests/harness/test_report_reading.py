"""`budgetlab check` reads the graders' report only in whole lines, however the grader's writes are cut, and starts
its import probe only while the report shows no worker ready and no check done."""

from __future__ import annotations

import json

from budgetlab.commands import checking


class _Probe:
    started = False

    def start(self):
        self.started = True

    def verdict(self):
        return None


class _Grader:
    """A grading process that has written one result and half of the next, then finishes the line and ends."""

    def __init__(self, report, rest: str):
        self.report, self.rest, self.polls = report, rest, 0

    def poll(self):
        self.polls += 1
        if self.polls == 2:
            with open(self.report, "a") as out:
                out.write(self.rest)
        return None if self.polls <= 2 else 0


def test_a_line_the_grader_is_still_writing_waits_for_its_end(tmp_path):
    first = {"kind": "result", "outcome": "passed", "title": "first"}
    second = json.dumps({"kind": "result", "outcome": "passed", "title": "second, " + "long " * 40}) + "\n"
    report = tmp_path / "report.jsonl"
    report.write_text(json.dumps(first) + "\n" + second[:129])
    seen: list[dict] = []
    outcome = checking.Outcome()
    said = checking._follow(_Grader(report, second[129:]), report, _Probe(), outcome, checking._Watch(), seen.append)
    assert said is None, said
    assert [entry["title"] for entry in seen] == ["first", json.loads(second)["title"]]


class _Running:
    """A grading process that runs for `polls` reads of the report, then ends."""

    def __init__(self, polls: int):
        self.left = polls

    def poll(self):
        self.left -= 1
        return None if self.left >= 0 else 0


def _follow_with_no_grace(monkeypatch, tmp_path, entries: list[dict]) -> _Probe:
    monkeypatch.setattr(checking, "PROBE_AFTER", 0.0)
    report = tmp_path / "report.jsonl"
    report.write_text("".join(json.dumps(entry) + "\n" for entry in entries))
    probe = _Probe()
    said = checking._follow(_Running(3), report, probe, checking.Outcome(), checking._Watch(), lambda entry: None)
    assert said is None, said
    return probe


def test_a_worker_that_became_ready_spares_the_import_probe(monkeypatch, tmp_path):
    """A started worker has imported the lab's code: however long grading takes, the probe never starts."""
    probe = _follow_with_no_grace(monkeypatch, tmp_path, [{"kind": "worker", "log": "w.log", "pid": 1, "started": 1},
                                                          {"kind": "ready", "pid": 1}])
    assert not probe.started


def test_a_finished_check_spares_the_import_probe(monkeypatch, tmp_path):
    probe = _follow_with_no_grace(monkeypatch, tmp_path, [{"kind": "result", "outcome": "passed", "title": "one"}])
    assert not probe.started


def test_grading_with_no_worker_ready_starts_the_import_probe(monkeypatch, tmp_path):
    """A worker started but not ready after the grace: the probe starts, to name a file that hangs or dies at import."""
    probe = _follow_with_no_grace(monkeypatch, tmp_path, [{"kind": "worker", "log": "w.log", "pid": 1, "started": 1}])
    assert probe.started
