"""What a learner's machine sends to the room board: sentences and symptoms, never code, file contents or paths."""

import json

import pytest

from budgetlab.board import payload

RESULTS = [
    {"nodeid": "tests/lab2_batch_jobs/test_out_of_time.py::test_job_ends_failed", "outcome": "failed",
     "title": "A job stopped by the soft limit ends failed and says how far it got.",
     "symptom": "the job stayed in 'importing'; see /home/ada/budgetlab/labs/lab2_batch_jobs/uploads.py line 40\n"
                "    def test_job_ends_failed(start_worker):"},
    {"nodeid": "tests/lab2_batch_jobs/test_within_budget.py::test_small_batch", "outcome": "passed",
     "title": "A small batch finishes within its budget.", "symptom": ""},
]


def built() -> dict:
    return payload.build(2, RESULTS, None, 1, 2, 12.34, "a" * 32, "Ada")


def test_a_result_names_checks_by_their_sentence_and_keeps_one_symptom_line():
    """Each check is its learner-facing sentence with passed or not, and a failed one its first symptom line."""
    body = built()
    assert body["checks"] == [
        {"sentence": "A job stopped by the soft limit ends failed and says how far it got.", "passed": False,
         "symptom": "the job stayed in 'importing'; see <path> line 40"},
        {"sentence": "A small batch finishes within its budget.", "passed": True, "symptom": ""},
    ], "a posted result must carry sentences and one-line symptoms only"
    assert (body["lab"], body["hints_used"], body["minutes"], body["exit_code"]) == (2, 2, 12.3, 1)


def test_a_result_carries_no_grader_code_node_ids_or_paths():
    """Nothing in the posted JSON names a grader file, a test function, or a path on the learner's disk."""
    text = json.dumps(built())
    for leak in ("tests/", "test_job_ends_failed", "def ", "/home/ada", "uploads.py", "nodeid"):
        assert leak not in text, f"{leak!r} would leave the learner's machine"


def test_validate_accepts_what_build_makes():
    """A result built by a learner's machine passes the board's validation unchanged."""
    body = built()
    assert payload.validate(json.loads(json.dumps(body))) == {**body, "minutes": 12.3}


@pytest.mark.parametrize("change, reason", [
    ({"name": ""}, "a name is needed"),
    ({"name": "x" * 41}, "at most 40"),
    ({"name": "=HYPERLINK(1)"}, "cannot start with"),
    ({"name": "a\u0007b"}, "control characters"),
    ({"lab": "2"}, "lab must be"),
    ({"exit_code": True}, "exit_code must be"),
    ({"post_id": "../../etc"}, "post_id must be"),
    ({"checks": [{"sentence": "x"}] * 41}, "at most 40"),
    ({"checks": [{"sentence": 1, "passed": True}]}, "each check needs"),
    ({"minutes": -1}, "minutes must be"),
])
def test_validate_refuses_malformed_results_with_one_reason(change, reason):
    """A malformed result is refused, and the reason names the field."""
    with pytest.raises(payload.Invalid, match=reason):
        payload.validate({**built(), **change})


def test_bare_file_names_stay_and_relative_paths_go():
    """A lab's own file name is the same for everyone and stays; a path with folders is blanked."""
    assert payload.one_line("entrypoint.sh line 31: no comment") == "entrypoint.sh line 31: no comment"
    assert payload.one_line("see labs/lab1/entrypoint.sh and C:\\Users\\ada\\x.py") == "see <path> and <path>"


def test_names_with_markup_are_allowed_and_kept_as_text():
    """A name like <script> is a legal name; the board shows it as text, so it is not rewritten here."""
    assert payload.name_problem("<script>alert(1)</script>") is None
    assert payload.validate({**built(), "name": "<b>Bo</b>"})["name"] == "<b>Bo</b>"
