"""Lab 6 blames the code only for what the code did: a right soft limit a busy pool began counting late, a worker
kept waiting for a core, an afternoon too slow to test the review are exit 2, never a fault (CI and rehearsals,
2026-12-05).

Each sentence is read from a state built by hand and handed to the grader's
own check; the stall meter and the log reading are read on real processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories import lab6
from budgetlab.stories.lab6 import Ending
from budgetlab.stories.reading import Unmeasured, wait_until
from budgetlab.stories.stallmeter import StallMeter

from .graders import loaded

STARTED = 1_000_000.0


def _ending(run_id=21, status="failed", seconds=232.0, counted_late=0.0, soft_limit=None, lost=0.0, lost_running=0.0,
            steps=30, done=12, stored=12, message="timed out after 12 of 30 steps", waited=0.5) -> Ending:
    return Ending(run_id=run_id, status=status, message=message, steps_total=steps, steps_stored=stored,
                  items_done=done, seconds=seconds, waited=waited, read_after=(seconds or 0.0) + 1.0, lost=lost,
                  counted_late=counted_late, soft_limit=soft_limit, started=STARTED, lost_running=lost_running,
                  asked_for=None if seconds is None else seconds + waited)


@pytest.fixture(scope="module")
def review_check():
    with loaded(lab6.SLUG, "test_review.py") as module:
        yield module


def test_a_right_soft_limit_counted_from_late_is_the_machines(review_check):
    """A rehearsal failed the review "only after 232 s"; with four checks at once, pools began counting 22-84 s late."""
    ending = _ending(counted_late=52.0, soft_limit=180.0)
    said = lab6.late(ending, lab6.REVIEW_BUDGET)
    assert isinstance(said, Unmeasured), said
    assert said == ("run 21 ended 'failed' only after 232 s, but the pool began counting its 180 s soft limit 52 s "
                    "after the run started (is the machine very busy?)")
    with pytest.raises(CouldNotGrade, match="began counting its 180 s soft limit"):
        review_check.test_the_review_ends_at_its_budget_with_its_count(SimpleNamespace(review=ending,
                                                                                       relapse_at=STARTED + 120))


def test_lateness_the_machine_does_not_cover_is_the_codes(review_check):
    ending = _ending(counted_late=10.0, soft_limit=180.0, lost=5.0)
    assert lab6.late(ending, lab6.REVIEW_BUDGET) == "run 21 ended 'failed' only after 232 s"
    with pytest.raises(AssertionError, match=r"^run 21 ended 'failed' only after 232 s \(budget 180 s"):
        review_check.test_the_review_ends_at_its_budget_with_its_count(SimpleNamespace(review=ending,
                                                                                       relapse_at=STARTED + 120))


def test_a_worker_kept_waiting_for_a_core_is_named_as_such():
    still = _ending(seconds=None, lost=70.0)
    said = lab6.late(still, lab6.REVIEW_BUDGET)
    assert said == ("run 21 was still 'failed' 200 s after it started (12 of 30 steps done), but the worker, the "
                    "database and the model service waited 70 s in all for a core after its promise ran out (is the "
                    "machine very busy?)")
    assert lab6.late(_ending(seconds=190.0, lost=70.0), lab6.REVIEW_BUDGET) is None
    # Nothing measured (no /proc, no soft limit logged), nothing excused, however the run was read.
    unread = _ending(status="running", seconds=None)
    unread.read_after = None
    assert type(lab6.late(unread, lab6.REVIEW_BUDGET)) is str


def test_a_healthy_question_that_failed_is_the_codes_unless_the_worker_starved():
    question = _ending(run_id=22, seconds=45.5, steps=3, done=1, stored=1, message="please try again")
    symptom = "run 22 ended 'failed' with 1 of 3 answers while the model was healthy"
    assert type(lab6.healthy_miss(question, symptom, [question])) is str
    spare = lab6.PROMISE - 3 * lab6.HEALTHY_LATENCY
    starved = _ending(run_id=22, seconds=45.5, steps=3, done=1, stored=1, lost_running=spare + 1)
    said = lab6.healthy_miss(starved, symptom, [starved])
    assert isinstance(said, Unmeasured) and said == (f"{symptom}, but the worker, the database and the model "
                                                     f"service waited {spare + 1:.0f} s in all for a core while it "
                                                     "ran (is the machine very busy?)")


def test_try_again_once_a_budget_counted_from_the_question_ran_out_is_no_fault():
    """CI: a correct fix counting 40 s from the asking said try again 38 s after the question, 19 s of them queued."""
    symptom = "run 32 ended 'failed' ('please try again')"
    gave_up = _ending(run_id=32, seconds=19.0, waited=19.0, steps=3, done=2, stored=2, message="please try again")
    answered = _ending(run_id=33, status="succeeded", seconds=14.0, steps=3, done=3, stored=3, message="")
    assert lab6.healthy_miss(gave_up, symptom, [gave_up, answered]) is None
    alone = lab6.healthy_miss(gave_up, symptom, [gave_up])
    assert isinstance(alone, Unmeasured) and alone == (
        f"{symptom}, but it ended 38 s after it was asked (a thread started it 19 s after it was sent), when a budget "
        "counted from the question may have run out, and none of the 1 questions asked with it was answered (is the "
        "machine very busy?)")
    # Early, slow on its own, or without telling the person to try again: the code's, whatever else was answered.
    early = _ending(run_id=34, seconds=3.0, waited=19.0, steps=3, done=0, stored=0, message="please try again")
    assert lab6.healthy_miss(early, symptom, [early, answered]) == symptom
    slow = _ending(run_id=36, seconds=45.5, waited=0.5, steps=3, done=1, stored=1, message="please try again")
    assert lab6.healthy_miss(slow, symptom, [slow, answered]) == symptom
    unclear = _ending(run_id=35, seconds=19.0, waited=19.0, steps=3, done=2, stored=2, message="error")
    assert lab6.healthy_miss(unclear, symptom, [unclear, answered]) == symptom


def test_a_review_the_afternoon_never_tested_is_no_verdict(review_check):
    """A stress run: the phases ran so slowly that the review answered all 30 steps before the relapse."""
    done = _ending(status="succeeded", seconds=130.0, done=30, stored=30, message="30 of 30 items done, 0 failed")
    with pytest.raises(CouldNotGrade, match="answered all 30 steps before the model hung again"):
        review_check.test_the_review_ends_at_its_budget_with_its_count(SimpleNamespace(review=done,
                                                                                       relapse_at=STARTED + 140))
    # Relapsed first: the review had the slow spell before it, and ending 'succeeded' is the code's.
    with pytest.raises(AssertionError, match="ended 'succeeded'"):
        review_check.test_the_review_ends_at_its_budget_with_its_count(SimpleNamespace(review=done,
                                                                                       relapse_at=STARTED + 100))


def test_a_fault_of_one_question_is_never_hidden_by_the_machines_lateness_of_another():
    questions_check = None
    with loaded(lab6.SLUG, "test_questions.py") as module:
        questions_check = module.test_every_question_ends_within_the_promise_while_the_provider_hangs
        machine = _ending(run_id=30, seconds=80.0, counted_late=30.0, soft_limit=45.0, steps=3, done=0, stored=0,
                          message="please try again")
        code = _ending(run_id=31, seconds=80.0, steps=3, done=0, stored=0, message="please try again")
        with pytest.raises(AssertionError, match=r"^1 of 2 questions .*: run 31 ended 'failed' only after 80 s$"):
            questions_check(SimpleNamespace(during=[machine, code]))
        with pytest.raises(CouldNotGrade, match="run 30 ended 'failed' only after 80 s, but the pool began"):
            questions_check(SimpleNamespace(during=[machine]))


def test_a_question_whose_ending_the_database_held_names_that_write_and_a_machines_lateness_hides_no_fault():
    """Issue 40: a prefork fix that writes a question's success outside its handler leaves it running when the soft
    limit lands in that write (a rehearsal met it under load; the checks now hold that write by plan)."""
    with loaded(lab6.SLUG, "test_questions.py") as module:
        held_check = module.test_a_question_whose_write_the_database_holds_still_ends
        open_run = _ending(run_id=24, status="running", seconds=None, steps=1, done=1, stored=1, message="")
        open_run.read_after = lab6.held_allowance() + 1.0
        answered = _ending(run_id=23, status="succeeded", seconds=62.0, steps=1, done=1, stored=1, message="")
        late_by_machine = _ending(run_id=23, status="failed", seconds=140.0, steps=1, done=1, stored=1,
                                  counted_late=30.0, soft_limit=45.0, message="please try again")
        said = _said(held_check, SimpleNamespace(held={"answer": lab6.Held(answered, True),
                                                       "ending": lab6.Held(open_run, True)}))
        assert said == (f"run 24 was still 'running' {lab6.held_allowance():g} s after it started (1 of 1 steps done); "
                        f"the database held the write that ends it for {lab6.HELD_SECONDS:g} s (allowed: the promise, "
                        f"that hold and the tolerance of {lab6.TOLERANCE:g} s)"), said
        said = _said(held_check, SimpleNamespace(held={"answer": lab6.Held(late_by_machine, True),
                                                       "ending": lab6.Held(open_run, False)}))
        assert said.startswith("run 24 was still 'running'") and said.endswith(
            "; the write that ends it never reached the database (allowed: the promise, that hold and the tolerance "
            f"of {lab6.TOLERANCE:g} s)"), said
        with pytest.raises(CouldNotGrade, match="run 23 ended 'failed' only after 140 s, but the pool began"):
            held_check(SimpleNamespace(held={"answer": lab6.Held(late_by_machine, True),
                                             "ending": lab6.Held(answered, True)}))


def _said(check, afternoon) -> str:
    with pytest.raises(AssertionError) as failed:
        check(afternoon)
    return str(failed.value)


def test_the_soft_limit_line_of_celerys_default_log_format_is_read():
    """A line as a lab 6 worker logged it on the lab clock (Celery 5.6.3, the default worker log format)."""
    line = ("[2026-12-05 23:14:40,126: WARNING/MainProcess] Soft time limit (180s) exceeded for "
            "kontor.assistant.review_month[4c2e24d2-1868-4e55-a2fd-2bbc75897ba2]\n")
    fired = lab6.soft_limits_logged("noise\n" + line + "[2026-12-05 23:14:41,088: ERROR/ForkPoolWorker-22] Task …\n")
    limit, at = fired["4c2e24d2-1868-4e55-a2fd-2bbc75897ba2"]
    assert limit == 180.0
    assert at == time.mktime(time.strptime("2026-12-05 23:14:40", "%Y-%m-%d %H:%M:%S")) + 0.126


def test_a_soft_limit_the_pool_logged_after_the_read_counts_as_counted_late(tmp_path):
    """A rehearsal left a prefork fix's question 'running' at its read (0 of 3 steps done, no limit logged yet):
    a pool that begins counting the soft limit late is the machine's, also when it logs it after the read."""
    task_id = "4c2e24d2-1868-4e55-a2fd-2bbc75897ba2"
    started = time.mktime(time.strptime("2026-12-06 16:10:00", "%Y-%m-%d %H:%M:%S"))
    log = tmp_path / "worker.log"
    log.write_text("[2026-12-06 16:11:20,000: WARNING/MainProcess] Soft time limit (45s) exceeded for "
                   f"kontor.assistant.answer_question[{task_id}]\n")
    watch = lab6.Watch(meter=None, log=log, task_ids={41: task_id})
    still_open = _ending(run_id=41, status="running", seconds=None, steps=3, done=0, stored=0, message="")
    still_open.started, still_open.read_after = started, 67.0
    symptom = "run 41 was still 'running' 65 s after it started (0 of 3 steps done)"
    assert lab6.late(still_open, lab6.PROMISE) == symptom
    lab6.count_late_limits([still_open], lab6.PROMISE, watch)
    said = lab6.late(still_open, lab6.PROMISE)
    assert isinstance(said, Unmeasured) and said == (f"{symptom}, but the pool began counting its 45 s soft limit "
                                                     "35 s after the run started (is the machine very busy?)"), said
    on_time = _ending(run_id=41, status="running", seconds=None, steps=3, done=0, stored=0, message="")
    on_time.started, on_time.read_after = started + 35.0, 67.0  # the same line, 45 s after this run's start
    lab6.count_late_limits([on_time], lab6.PROMISE, watch)
    assert lab6.late(on_time, lab6.PROMISE) == symptom


def test_the_hard_limit_line_of_celerys_default_log_format_is_read():
    """As a lab 6 worker logged it under load (Celery 5.6.3): an ERROR line, beside the soft limit's WARNING."""
    text = ("[2026-12-06 13:43:13,791: WARNING/MainProcess] Soft time limit (45s) exceeded for "
            "kontor.assistant.answer_question[d55c6310-df5d-4b0c-9c90-b687caafea01]\n"
            "[2026-12-06 13:43:15,912: ERROR/MainProcess] Hard time limit (60s) exceeded for "
            "kontor.assistant.answer_question[d55c6310-df5d-4b0c-9c90-b687caafea01]\n")
    assert lab6.soft_limits_logged(text)["d55c6310-df5d-4b0c-9c90-b687caafea01"][0] == 45.0
    limit, at = lab6.hard_limits_logged(text)["d55c6310-df5d-4b0c-9c90-b687caafea01"]
    assert limit == 60.0
    assert at == time.mktime(time.strptime("2026-12-06 13:43:15", "%Y-%m-%d %H:%M:%S")) + 0.912


def test_a_run_the_hard_limit_ended_with_its_work_done_is_the_machines_when_it_waited_for_a_core():
    """CI: a prefork alternative's three recovered questions stayed 'running' with all answers stored (hard limit)."""
    def killed(lost, stored=3, called_after_soft=None):
        ending = _ending(run_id=41, status="running", seconds=None, steps=3, done=stored, stored=stored, message="")
        ending.kill_window, ending.killed_lost, ending.called_after_soft = 15.0, lost, called_after_soft
        return ending

    symptom = ("run 41 was still 'running' 65 s after it started (3 of 3 steps done): the pool's hard limit ended "
               "its task 15 s after its soft limit fired")
    said = lab6.late(killed(8.0), lab6.PROMISE)
    assert isinstance(said, Unmeasured) and said == (f"{symptom}, with every answer stored, while the worker, the "
                                                     "database and the model service waited 8 s of them in all for "
                                                     "a core (is the machine very busy?)")
    assert type(lab6.late(killed(7.0), lab6.PROMISE)) is str and lab6.late(killed(7.0), lab6.PROMISE) == symptom
    # Steps left to do when the limits fired, and the code asked the model for them after its soft limit (or
    # nothing tells): whatever the machine did, the code had gone on.
    assert type(lab6.late(killed(15.0, stored=2), lab6.PROMISE)) is str
    assert type(lab6.late(killed(15.0, stored=2, called_after_soft=True), lab6.PROMISE)) is str
    # A stress run: a handler that had the model asked nothing more, starved between the limits.
    said = lab6.late(killed(8.0, stored=2, called_after_soft=False), lab6.PROMISE)
    assert isinstance(said, Unmeasured) and said == (
        "run 41 was still 'running' 65 s after it started (2 of 3 steps done): the pool's hard limit ended its task "
        "15 s after its soft limit fired, having asked the model nothing more, while the worker, the database and "
        "the model service waited 8 s of them in all for a core (is the machine very busy?)"), said


def test_whether_a_run_asked_the_model_after_a_moment_is_read_from_the_services_calls():
    calls = [{"wall": 10.0, "prompt": "Question: Why was invoice 1004 charged twice?\nStep 1: ..."},
             {"wall": 20.0, "prompt": "Question: Why was invoice 1005 charged twice?\nStep 2: ..."}]
    watch = lab6.Watch(meter=None, log=None, calls=lambda: calls)
    assert watch.called_after("Why was invoice 1004 charged twice?", 15.0) is False
    assert watch.called_after("Why was invoice 1005 charged twice?", 15.0) is True
    assert watch.called_after("Why was invoice 1006 charged twice?", 15.0) is None  # its prompts say it otherwise


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="the stall meter reads Linux's /proc")
def test_the_stall_meter_sees_a_process_kept_waiting_for_a_core():
    """Two busy processes on one core: each waits for it about half the time, and the meter reads that wait."""
    spin = ("import os, time\nos.sched_setaffinity(0, {0})\nend = time.monotonic() + 0.6\n"
            "while time.monotonic() < end: pass")
    with StallMeter() as meter:
        started = time.time()
        busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
        meter.watch(lambda: [busy[0].pid])
        for process in busy:
            process.wait()
        # Read past their end (CI once read 0 s when the last reading no longer had the ended process).
        exited = time.time()
        assert wait_until(lambda: meter._times[-1] > exited + 0.1, time.monotonic() + 10)
        lost = meter.lost(started)
    assert lost >= 0.15, f"the meter read {lost:.3f} s of waiting for two processes sharing one core for 0.6 s"
    assert meter.lost(time.time() + 10) == 0.0


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="the stall meter reads Linux's /proc")
def test_the_stall_meter_adds_up_the_most_kept_thread_of_each_group():
    """A run's work passes between processes (worker, database, model service): their waits add up, one per group."""
    spin = ("import os, time\nos.sched_setaffinity(0, {0})\nend = time.monotonic() + 0.6\n"
            "while time.monotonic() < end: pass")
    with StallMeter() as apart, StallMeter() as together:
        started = time.time()
        busy = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(3)]
        apart.watch(lambda: [busy[0].pid], lambda: [busy[1].pid])
        together.watch(lambda: [busy[0].pid, busy[1].pid])
        for process in busy:
            process.wait()
        exited = time.time()
        assert wait_until(lambda: min(apart._times[-1], together._times[-1]) > exited + 0.1, time.monotonic() + 10)
        summed, most = apart.lost(started), together.lost(started)
    # Each of three processes sharing one core for 0.6 s waits about 0.4 s of it.
    assert most >= 0.15 and summed >= 1.5 * most, f"two groups read {summed:.3f} s, one group {most:.3f} s"


@pytest.mark.stack
def test_the_meter_names_the_backends_of_a_database_on_this_machine_and_none_elsewhere():
    """A run waits on the PostgreSQL backends that serve its writes: the meter reads theirs too, only when local."""
    import psycopg

    from budgetlab import stack
    from budgetlab.stories.stallmeter import DatabaseBackends

    url = stack.database_url("postgres")
    with psycopg.connect(url, autocommit=True) as writer, DatabaseBackends(url) as backends:
        mine = writer.execute("SELECT pg_backend_pid()").fetchone()[0]
        assert mine in backends.pids()
    elsewhere = url.replace("127.0.0.1", "192.0.2.1").replace("localhost", "192.0.2.1")
    assert "192.0.2.1" in elsewhere
    with DatabaseBackends(elsewhere) as backends:
        assert backends.pids() == set(), "an id read from another machine's server names no process here"
