"""How the room board reads learners' results: table cells, who is stuck, and what holds each lab back."""

from budgetlab.board import standing
from budgetlab.board.rig import check_result

LABS = [(1, "The limit nobody chose"), (2, "The signal your loop already caught")]
ADA, BO, CY = "a" * 32, "b" * 32, "c" * 32
MINUTE = 60.0


def fold_all(posts):
    """Fold (learner, result, received_at) in order; return learners and standings as the board stores them."""
    standings, learners = {}, {}
    for learner, result, at in posts:
        key = (learner, result["lab"])
        standings[key] = standing.fold(standings.get(key), result, at)
        learners[learner] = {"learner": learner, "name": result["name"], "last_lab": result["lab"]}
    return list(learners.values()), standings


def result(learner, name, lab, passed, total=3, **kwargs):
    return check_result(learner, name, lab, passed, total, **kwargs)


def test_cells_say_not_started_failing_n_of_m_or_passed():
    """A lab with no result is not started; a failing one shows how many checks fail of how many; a pass stays passed."""
    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 1), 0), (ADA, result(ADA, "Ada", 2, 3), 10)])
    cells = standing.board(LABS, learners, standings, now=20, stuck_minutes=10)["learners"][0]["cells"]
    assert [c["label"] for c in cells] == ["failing 2/3", "passed"]
    learners, standings = fold_all([(BO, result(BO, "Bo", 1, 3), 0), (BO, result(BO, "Bo", 1, 0), 5)])
    cells = standing.board(LABS, learners, standings, now=20, stuck_minutes=10)["learners"][0]["cells"]
    assert [c["label"] for c in cells] == ["passed", "not started"], "a lab once passed stays passed"


def test_a_learner_failing_the_same_check_for_the_chosen_minutes_is_stuck():
    """Stuck means the same check failed in every result for at least the chosen minutes, counted to now."""
    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 1), 0), (ADA, result(ADA, "Ada", 1, 1), 4 * MINUTE)])
    board = standing.board(LABS, learners, standings, now=12 * MINUTE, stuck_minutes=10)
    assert board["learners"][0]["stuck"] == {"sentence": "Check 2 of lab 1 holds.", "minutes": 12.0, "lab": 1}
    board = standing.board(LABS, learners, standings, now=9 * MINUTE, stuck_minutes=10)
    assert board["learners"][0]["stuck"] is None, "nine minutes is not yet ten"


def test_the_stuck_clock_restarts_when_the_check_passes_in_between():
    """A check that passed once and fails again counts from its new failure, not its first."""
    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 1), 0), (ADA, result(ADA, "Ada", 1, 2), 5 * MINUTE),
                                    (ADA, result(ADA, "Ada", 1, 2), 6 * MINUTE)])
    # Check 2 failed at 0 and passed at 5; check 3 has failed since 0.
    assert standings[(ADA, 1)]["failing_since"] == {"Check 3 of lab 1 holds.": 0}
    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 1), 0), (ADA, result(ADA, "Ada", 1, 3), 5 * MINUTE),
                                    (ADA, result(ADA, "Ada", 1, 1), 6 * MINUTE)])
    board = standing.board(LABS, learners, standings, now=12 * MINUTE, stuck_minutes=10)
    assert board["learners"][0]["stuck"] is None, "the failures before the pass must not count"


def test_a_learner_who_moved_on_is_not_stuck_on_the_lab_they_left():
    """Only the lab of the latest result can make a learner stuck."""
    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 1), 0), (ADA, result(ADA, "Ada", 2, 1), 11 * MINUTE)])
    board = standing.board(LABS, learners, standings, now=12 * MINUTE, stuck_minutes=10)
    assert board["learners"][0]["stuck"] is None


def test_failing_checks_are_ranked_by_how_many_learners_they_hold_back_now():
    """Per lab, each failing check counts the learners whose latest result fails it, out of all who checked the lab."""
    sentences = ["Every job ends in a final state.", "The ending says how far it got.", "Small batches finish."]
    posts = [(ADA, result(ADA, "Ada", 2, 0, sentences=sentences), 0),
             (BO, result(BO, "Bo", 2, 1, sentences=sentences), 0),
             (CY, result(CY, "Cy", 2, 3, sentences=sentences), 0)]
    learners, standings = fold_all(posts)
    lab2 = standing.board(LABS, learners, standings, now=1, stuck_minutes=10)["labs"][1]
    assert [b["text"] for b in lab2["blockers"]] == [
        "2 of 3 fail: Small batches finish.", "2 of 3 fail: The ending says how far it got.",
        "1 of 3 fail: Every job ends in a final state."]
    assert (lab2["checked"], lab2["passed"]) == (3, 1)


def test_a_result_that_could_not_grade_is_not_an_attempt():
    """A check that could not grade (stack down, say) shows as such and is not counted as an attempt."""
    broken = {**result(ADA, "Ada", 1, 0), "checks": [], "exit_code": 2, "could_not_grade": "the stack is not running"}
    learners, standings = fold_all([(ADA, broken, 0)])
    cell = standing.board(LABS, learners, standings, now=1, stuck_minutes=0)["learners"][0]["cells"][0]
    assert (cell["state"], cell["attempts"]) == ("could not grade", 0)


def test_report_rows_match_budgetlab_report_columns():
    """The export has one row per learner and lab with the columns of `budgetlab report`."""
    from budgetlab.commands import reporting

    learners, standings = fold_all([(ADA, result(ADA, "Ada", 1, 3, hints=2, minutes=7.26), 0)])
    rows = standing.report_rows(LABS, learners, standings)
    assert [list(row) for row in rows] == [reporting.COLUMNS] * 2
    assert rows[0] == {"learner": "Ada", "lab": 1, "title": "The limit nobody chose", "status": "passed",
                       "attempts": 1, "hints_used": 2, "minutes_to_pass": 7.3}
    assert rows[1]["status"] == "not started"


def test_lab_code_that_kept_the_checks_from_running_is_a_failed_attempt_not_the_machines_fault():
    """Code that exited at import ends its check with exit 1: the board shows the lab failing, with that sentence."""
    from budgetlab.board import payload
    from budgetlab.commands.checking import Outcome

    sentence = "labs/lab2_batch_jobs/jobs.py exited the process at import (exit code 3)"
    broken = payload.validate(payload.of_outcome(2, Outcome(could_not_grade=sentence, code_fault=True), 0, 1.0, ADA,
                                                 "Ada"))
    down = payload.validate(payload.of_outcome(2, Outcome(could_not_grade="the stack is not running"), 0, 1.0, BO, "Bo"))
    learners, standings = fold_all([(ADA, broken, 0), (BO, down, 0)])
    ada, bo = standing.board(LABS, learners, standings, now=1, stuck_minutes=0)["learners"]
    assert (ada["cells"][1]["label"], ada["cells"][1]["attempts"]) == ("failing 1/1", 1)
    assert standings[(ADA, 2)]["latest"]["failing"][0][1] == payload.one_line(sentence)
    assert (bo["cells"][1]["state"], bo["cells"][1]["attempts"]) == ("could not grade", 0)
