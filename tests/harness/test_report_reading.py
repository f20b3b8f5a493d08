"""`budgetlab check` reads the graders' report only in whole lines, however the grader's writes are cut."""

from __future__ import annotations

import json

from budgetlab.commands import checking


class _Probe:
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
