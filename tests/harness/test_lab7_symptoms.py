"""Each of lab 7's symptom sentences says only what its plan observed: who took what over, what was still held, what ran.

One test per sentence family: it builds the observed state a plan can end
in and reads the sentence budgetlab.stories.lab7 makes of it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from budgetlab.harness.grading import CouldNotGrade
from budgetlab.stories import lab7

from .graders import loaded

FILES = 6


def _effects(status: str = "processing", stored: int = 2, letters: int = 0, calls: Counter | None = None,
             twice: int = 0) -> lab7.Effects:
    documents = Counter({f"beleg-{n:03d}.txt": 2 if n <= twice else 1 for n in range(1, stored + 1)})
    return lab7.Effects(upload_id=1, files=FILES, status=status, items_done=stored, documents=documents,
                        letters=letters, model_calls=calls if calls is not None else Counter())


def _killed(later: int = 0, runs_ended: int = 0, after: list[str] = (), **effects) -> lab7.Outcome:
    """The kill plan: the worker died as the run asked about file-3, `later` deliveries came after."""
    at_kill = ("file-1", "file-2", "file-3")
    calls = Counter(at_kill) + Counter(after)
    return lab7.Outcome(effects=_effects(calls=calls, **effects), deliveries=1 + later, ended=False,
                        runs_ended=runs_ended, killed=True, deliveries_at_kill=1, calls_at_kill=at_kill)


def test_a_claim_still_held_after_a_kill_is_not_called_a_takeover():
    """Issue 40: the redeliveries found the claim held and returned; no worker took the upload over."""
    said = lab7.killed_left_open(_killed(later=2, runs_ended=2))
    assert said.endswith("the message came twice more after the kill, and each of those runs ended without "
                         "billing a model call"), said
    assert "took it over" not in said and "2 of 6 receipts stored" in said, said


def test_no_delivery_after_a_kill_says_so():
    said = lab7.killed_left_open(_killed())
    assert said.endswith("with 2 of 6 receipts stored: no delivery came after the kill"), said


def test_a_run_still_working_after_the_kill_is_counted_with_what_it_billed():
    said = lab7.after_the_kill(_killed(later=1, runs_ended=0, after=["file-3", "file-4"]))
    assert said == "the message came once more after the kill, 1 of those runs still working, 2 model calls billed since"


def test_runs_that_billed_after_the_kill_and_ended_say_how_much():
    said = lab7.after_the_kill(_killed(later=3, runs_ended=3, after=["file-3"]))
    assert said == "the message came 3 times more after the kill; those runs billed 1 model call and ended", said


def test_files_billed_again_after_a_kill_are_named_but_not_the_one_in_flight():
    outcome = _killed(later=1, runs_ended=1, after=["file-1", "file-3", "file-4", "file-5", "file-6"])
    assert lab7.rebilled(outcome) == ["file-1"]
    said = lab7.billed_again(outcome)
    assert said == ("an upload of 6 files whose worker was killed mid-job billed 8 model calls: file-1, billed "
                    "before the kill, was billed again after it"), said


def test_repeated_receipts_name_how_the_message_came_as_observed():
    """'handed out again while its first run still worked' only when the second delivery found the first alive."""
    effects = _effects(status="completed", stored=FILES, letters=2, twice=FILES)
    alive = lab7.Outcome(effects=effects, deliveries=2, ended=True, runs_ended=2, first_alive_at_second=True)
    assert lab7.repeated(alive, "redelivered").startswith(
        "an upload whose message was handed out again while its first run still worked (delivered 2x): 6 of its 6 "
        "receipts were booked more than once (e.g. beleg-001.txt 2x), the customer got 2 letters")
    after = lab7.Outcome(effects=effects, deliveries=2, ended=True, runs_ended=2)
    assert lab7.repeated(after, "redelivered").startswith("an upload whose message was handed out again (delivered 2x)")
    once = lab7.Outcome(effects=effects, deliveries=1, ended=True, runs_ended=1)
    assert lab7.repeated(once, "redelivered").startswith("an upload whose message was sent once (delivered 1x)")
    assert lab7.repeated(once, "raced").startswith("an upload whose message was sent twice at once (delivered 1x)")
    raced = lab7.Outcome(effects=effects, deliveries=2, ended=True, runs_ended=2)
    assert lab7.repeated(raced, "raced").startswith("an upload whose message reached two idle workers at the same")
    killed = _killed(later=1, runs_ended=1, status="completed", stored=FILES, letters=1, twice=2)
    assert lab7.repeated(killed, "killed").startswith("an upload whose message came again after its worker was killed")
    assert lab7.repeated(_killed(twice=1), "killed").startswith("an upload whose message lost its worker mid-job")


def test_no_letter_is_a_loss_only_once_the_upload_ended():
    open_ = lab7.Outcome(effects=_effects(), deliveries=1, ended=False, runs_ended=0)
    assert lab7.repeated(open_, "once") == ""
    ended = lab7.Outcome(effects=_effects(status="completed", stored=FILES), deliveries=1, ended=True, runs_ended=1)
    assert lab7.repeated(ended, "once").endswith("the customer got 0 letters")


def test_an_open_upload_says_whether_a_run_still_worked_on_it():
    effects = _effects()
    assert lab7.where_it_stands(lab7.Outcome(effects=effects, deliveries=1, ended=False, runs_ended=0)) == (
        "was still 'processing' with a run still working on it")
    assert lab7.where_it_stands(lab7.Outcome(effects=effects, deliveries=1, ended=False, runs_ended=1)) == (
        "was still 'processing' after every run of it had ended")
    assert lab7.where_it_stands(_killed()) == "was still 'processing' after every run of it had ended"
    done = lab7.Outcome(effects=_effects(status="failed"), deliveries=1, ended=True, runs_ended=1)
    assert lab7.where_it_stands(done) == "ended 'failed'"


def test_a_run_that_ended_before_the_kill_says_how_far_it_got():
    outcome = lab7.Outcome(effects=_effects(status="failed", calls=Counter(["file-1"]), stored=1), deliveries=1,
                           ended=True, runs_ended=1, ended_before_kill=True)
    assert lab7.ended_before_the_kill(outcome) == (
        "an upload's first run ended after 1 model call, before its worker could be killed mid-job, and left it "
        "'failed' with 1 of 6 receipts stored")


def test_a_worker_that_never_refused_is_not_said_to_have_refused():
    assert lab7.refused_how(lab7.StartAttempt(started=False, returncode=None, output="")) == (
        "the worker never became ready, and it had not exited either: a deployment sees no refusal")
    assert lab7.refused_how(lab7.StartAttempt(started=False, returncode=0, output="")).startswith(
        "the worker exited with status 0 before it was ready")


def _sent_once(deliveries: int) -> lab7.Outcome:
    """The plan that sends one message: 3 files, each booked and billed as often as the message came."""
    calls = Counter({f"file-{n}": deliveries for n in range(1, 4)})
    effects = lab7.Effects(upload_id=1, files=3, status="completed", items_done=3,
                           documents=Counter({f"beleg-{n:03d}.txt": deliveries for n in range(1, 4)}),
                           letters=deliveries, model_calls=calls)
    return lab7.Outcome(effects=effects, deliveries=deliveries, ended=True, runs_ended=deliveries)


@pytest.fixture(scope="module")
def exactly_once():
    with loaded(lab7.SLUG, "test_exactly_once.py") as module:
        yield module


def test_a_message_sent_once_that_came_again_inside_the_visibility_timeout_is_the_machines(exactly_once):
    """A rehearsal's starter: half an hour of calls, an hour's visibility timeout, the message came twice."""
    day = SimpleNamespace(once=_sent_once(2), file_seconds=600.0, visibility_timeout=3600.0)
    with pytest.raises(CouldNotGrade) as unmeasured:
        exactly_once.test_an_upload_delivered_once_takes_effect_once(day)
    assert str(unmeasured.value) == (
        "an upload whose message was sent once (delivered 2x): 3 of its 3 receipts were booked more than once "
        "(e.g. beleg-001.txt 2x), the customer got 2 letters; the broker handed the message out again, although the "
        "upload's 1,800 s of model calls fit inside its 3,600 s visibility timeout: the run took longer than that "
        "(is the machine very busy?)"), unmeasured.value


def test_a_message_sent_once_that_came_again_after_a_timeout_shorter_than_its_work_is_the_codes(exactly_once):
    day = SimpleNamespace(once=_sent_once(2), file_seconds=600.0, visibility_timeout=900.0)
    with pytest.raises(AssertionError) as failed:
        exactly_once.test_an_upload_delivered_once_takes_effect_once(day)
    assert str(failed.value).startswith("an upload whose message was sent once (delivered 2x): 3 of its 3 receipts "
                                        "were booked more than once"), failed.value


def test_a_message_sent_once_that_came_again_and_changed_nothing_passes(exactly_once):
    outcome = _sent_once(1)
    outcome.deliveries = 2
    exactly_once.test_an_upload_delivered_once_takes_effect_once(
        SimpleNamespace(once=outcome, file_seconds=600.0, visibility_timeout=3600.0))


def test_the_run_view_reads_a_run_its_hard_limit_ended_as_ended():
    """A busy machine stretched the starter's second run past its hard limit, and `budgetlab run 7` waited out its
    watch saying the run was still running: Celery logs no line of the run's own then, only the pool's."""
    from celery.worker import request

    from budgetlab.scenarios import lab7 as view

    task_id = "2c2ed17f-0000-4000-8000-000000000000"
    logged = "Hard time limit (%ss) exceeded for %s[%s]"
    assert f"'{logged}'" in Path(request.__file__).read_text()  # the pool's own words, in the pinned Celery
    said = logged % (7200, "kontor.uploads.process_upload", task_id)
    seen = view.KILLED.search(f"[2026-12-06 16:44:11,198: ERROR/MainProcess] {said}")
    assert seen and seen["id"] == task_id and float(seen["limit"]) == 7200


def test_a_copy_restored_into_the_queue_is_still_held(broker_url):
    """A plan settles only once the broker holds no copy of its message: neither unacknowledged nor restored into
    the queue and not taken yet (a later plan on the same files would otherwise count that copy's bills)."""
    import json

    import redis

    client = redis.Redis.from_url(broker_url)
    try:
        client.hset(lab7.UNACKED, "tag-1", json.dumps([{"headers": {"id": "running"}}, "", "uploads"]))
        client.rpush("uploads", json.dumps({"headers": {"id": "restored", "redelivered": True}, "body": ""}))
        client.rpush("elsewhere", json.dumps({"headers": {"id": "another queue's"}, "body": ""}))
        assert sorted(lab7.held_for(client, "uploads")) == ["restored", "running"]
    finally:
        client.close()
