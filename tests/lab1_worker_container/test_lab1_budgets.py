"""Hidden checks of lab 1, measured on real workers started from the target's entrypoint.sh and settings.py."""

from __future__ import annotations

from lab1_measure import (CHANGED, DECORATED_HARD, DECORATED_SOFT, OVERRIDE_HARD, OVERRIDE_SOFT, Fleet, Outcome,
                          lateness_allowed)

from budgetlab.harness.grading import faults_first
from budgetlab.stories.lab1 import (BATCH, BATCH_AT_LEAST, DEFAULT_HARD, DEFAULT_SOFT, HARD_VARIABLE, INTERACTIVE,
                                    INTERACTIVE_AT_MOST, QUEUES, SOFT_VARIABLE, TRANSACTIONAL)
from budgetlab.stories.reading import Unmeasured

# Production seconds a limit may arrive before its time: the precision of the pool's timers.
EARLY = 20.0


def _seconds(value: float) -> str:
    return f"{value:.0f} s"


def _limit(value: float | None, kind: str = "soft") -> str:
    return f"a {_seconds(value)} {kind} limit" if value else f"no {kind} limit"


def _queues(names: list[str]) -> str:
    quoted = [f"'{name}'" for name in names]
    if len(quoted) == 1:
        return f"queue {quoted[0]}"
    return f"queues {', '.join(quoted[:-1])} and {quoted[-1]}"


def _report(prefix: str, symptoms: dict[str, str | None]) -> str:
    """Group the queues that show the same symptom, in queue order; '' when every queue is fine.

    The code's symptoms come first and alone: a queue the machine kept from
    being measured must not hide another queue's fault. With none, a queue
    that could not be measured means the check could not grade (exit 2).
    """
    grouped: dict[str, list[str]] = {}
    for queue, symptom in symptoms.items():
        if symptom:
            grouped.setdefault(symptom, []).append(queue)
    # Each line keeps its symptom's kind (str(), or Unmeasured for the machine's), for faults_first.
    return "; ".join(faults_first(type(symptom)(f"{prefix}{_queues(queues)}: {symptom}")
                                  for symptom, queues in grouped.items()))


def _as_run(probes, message: str) -> str:
    """Say where a number the learner never wrote comes from: the main fleet runs settings.py's budget changed."""
    if any(f"{value:g} s" in message for value in CHANGED.values()):
        return f"{message} (the checks ran your files {probes.how_changed})"
    return message


def _timing(outcome: Outcome) -> Unmeasured | None:
    """Say so when a limit's value was right but it did not hold in time: the machine's doing, not the code's.

    Lateness is measured from the probe's start. Earliness is measured from
    the moment the probe was sent, which comes before the pool armed its
    timers however busy the machine is: a child that a busy machine kept
    waiting between accepting the probe and starting it must not read as a
    limit that came early. A kill that comes late after a soft limit that
    came on time is the machine's: the pool logged the right hard limit, and
    only its timer, the SIGTERM, the SIGKILL and the reporting of the kill
    lagged (a clock run at another pace would have made the soft one late too).
    """
    checks = [(outcome.soft_limit, outcome.soft_at,
               "SoftTimeLimitExceeded for a {limit} limit reached the task {at} in"),
              (outcome.hard_limit, outcome.killed_at, "the kill for a {limit} hard limit came {at} in")]
    on_time = []
    for limit, at, says in checks:
        if limit is None or at is None:
            continue
        early = outcome.queued is not None and at + outcome.queued < limit - EARLY
        late = at > limit + lateness_allowed(limit)
        if early or (late and not on_time):
            return Unmeasured(says.format(limit=_seconds(limit), at=_seconds(at)) + " (is the machine very busy?)")
        on_time.append(limit)
    return None


def _limits(outcome: Outcome, soft: float, hard: float, who: str) -> str | Unmeasured | None:
    """Compare a probe that ran past both limits with the soft and hard limit it should have met."""
    if outcome.error:
        return f"{who} failed in an unexpected way: {outcome.error}"
    if outcome.soft_limit is None:
        ending = (f"ran its full {_seconds(outcome.seconds)}" if outcome.finished
                  else f"was killed at {_seconds(outcome.hard_limit)}")
        return f"{who} {ending} without ever getting SoftTimeLimitExceeded; it should get it at {_seconds(soft)}"
    if outcome.soft_limit != soft:
        return f"{who} got SoftTimeLimitExceeded at {_seconds(outcome.soft_limit)}, not at {_seconds(soft)}"
    if outcome.finished:
        return (f"{who} was never killed: after its soft limit it ran on until it finished at "
                f"{_seconds(outcome.ran)}; it should be killed at {_seconds(hard)}")
    if outcome.hard_limit is None:
        # The limit came before the probe's code began: a machine too busy to measure on, not the code's doing.
        return Unmeasured(f"{who} got SoftTimeLimitExceeded before its code began, so its hard limit could "
                          "not be measured (is the machine very busy?)")
    if outcome.hard_limit != hard:
        return f"{who} was killed at {_seconds(outcome.hard_limit)}, not at {_seconds(hard)}"
    return _timing(outcome)


def _preempted(fleet: Fleet, queue: str) -> str | None:
    """Say so when a queue's hard limit comes no later than its soft one, whichever layer set either number.

    Such a soft limit never gets to act: the child is killed before
    SoftTimeLimitExceeded fires, or at the moment it does. The numbers are
    the ones the master reports for a task without limits of its own.
    """
    soft, hard = fleet.reported_limits(queue)
    if soft and hard and hard <= soft:
        return (f"a task without its own limit has a {_seconds(hard)} hard limit, no later than its "
                f"{_seconds(soft)} soft limit, so it is killed before SoftTimeLimitExceeded can do anything")
    return None


def test_transactional_queues_get_the_settings_budget(probes):
    """On imports, documents and sweeps, a task without its own limit gets settings.py's 600 s soft and 900 s hard."""
    soft, hard = probes.settings.budget()
    assert not probes.settings.error, probes.settings.error
    assert (soft, hard) == (DEFAULT_SOFT, DEFAULT_HARD), (
        f"with neither {SOFT_VARIABLE} nor {HARD_VARIABLE} set, settings.py gives a task without its own limit "
        f"{_limit(soft)} and {_limit(hard, 'hard')}; the house budget is {_seconds(DEFAULT_SOFT)} soft and "
        f"{_seconds(DEFAULT_HARD)} hard")
    probes.main.require()
    # The main fleet runs the copy of settings.py with the budget changed: a probe that a busy machine kept
    # sleeping into that budget met the limit in force, which is no fault; only an earlier limit is.
    in_force = probes.changed_settings.budget()
    in_force_soft, in_force_hard = in_force[0] or soft, in_force[1] or hard
    symptoms = {}
    for queue in TRANSACTIONAL:
        within = probes.within_budget[queue].outcome()
        if within.error:
            symptoms[queue] = f"a task without its own limit failed in an unexpected way: {within.error}"
        elif within.soft_limit is not None and within.soft_limit < in_force_soft:
            symptoms[queue] = (f"a task without its own limit was stopped at {_seconds(within.soft_limit)} "
                               f"although the settings say {_seconds(soft)}")
        elif not within.finished and within.hard_limit is not None and within.hard_limit < in_force_hard:
            symptoms[queue] = f"a task without its own limit was killed at {_seconds(within.hard_limit)}"
        elif within.soft_limit is None:
            # A limit so late that the probe ended first still is the worker's, and the worker reports it.
            reported = probes.main.reported_limits(queue)[0]
            if reported is not None and reported < in_force_soft:
                symptoms[queue] = (f"a task without its own limit gets a {_seconds(reported)} soft limit there "
                                   f"(the worker reports it) although the settings say {_seconds(soft)}")
    message = _as_run(probes, _report("transactional ", symptoms))
    assert not message, message


def test_decorator_limits_win_on_every_queue(probes):
    """On every queue, a task's own decorator limits win over whatever the worker or the settings say."""
    probes.main.require()
    who = (f"a task whose decorator asks for {_seconds(DECORATED_SOFT)} soft and "
           f"{_seconds(DECORATED_HARD)} hard")
    symptoms = {queue: _limits(probes.decorated[queue].outcome(), DECORATED_SOFT, DECORATED_HARD, who)
                for queue in QUEUES}
    message = _as_run(probes, _report("", symptoms))
    assert not message, message


def test_environment_overrides_reach_the_workers(probes):
    """With KONTOR_TASK_SOFT_TIME_LIMIT and KONTOR_TASK_TIME_LIMIT set, tasks without limits get those numbers."""
    probes.overridden.require()
    who = (f"with {SOFT_VARIABLE}={OVERRIDE_SOFT:g} and {HARD_VARIABLE}={OVERRIDE_HARD:g} set for the container, "
           "a task without its own limit")
    symptoms = {queue: _limits(probes.overrides[queue].outcome(), OVERRIDE_SOFT, OVERRIDE_HARD, who)
                for queue in TRANSACTIONAL}
    message = _report("transactional ", symptoms)
    assert not message, message


def test_agent_queues_keep_budgets_of_their_own(probes):
    """agent-batch keeps a generous soft limit (at least 1800 s) and agent-interactive a tight one (at most 60 s)."""
    probes.main.require()
    batch = probes.agents[BATCH].outcome()
    interactive = probes.agents[INTERACTIVE].outcome()
    symptoms = {}
    if batch.error:
        symptoms[BATCH] = f"a task without its own limit failed in an unexpected way: {batch.error}"
    elif batch.soft_limit is not None and batch.soft_limit < BATCH_AT_LEAST:
        symptoms[BATCH] = (f"a task without its own limit was stopped at {_seconds(batch.soft_limit)}; "
                           f"batch agent work needs a soft limit of at least {_seconds(BATCH_AT_LEAST)}")
    elif not batch.finished and batch.hard_limit is not None and batch.hard_limit < BATCH_AT_LEAST:
        symptoms[BATCH] = (f"a task without its own limit was killed at {_seconds(batch.hard_limit)}; "
                           f"batch agent work needs at least {_seconds(BATCH_AT_LEAST)}")
    elif probes.main.reported_limits(BATCH)[0] is None:
        symptoms[BATCH] = ("a task without its own limit has no soft limit at all there (the worker reports none); "
                           f"batch agent work needs an explicit one of at least {_seconds(BATCH_AT_LEAST)}")
    else:
        symptoms[BATCH] = _preempted(probes.main, BATCH)
    if interactive.error:
        symptoms[INTERACTIVE] = f"a task without its own limit failed in an unexpected way: {interactive.error}"
    elif interactive.soft_limit is None:
        symptoms[INTERACTIVE] = (f"a task without its own limit ran {_seconds(interactive.seconds)} without "
                                 "getting SoftTimeLimitExceeded; a person waits there, so it needs a soft limit "
                                 f"of at most {_seconds(INTERACTIVE_AT_MOST)}")
    elif interactive.soft_limit > INTERACTIVE_AT_MOST:
        symptoms[INTERACTIVE] = (f"a task without its own limit got SoftTimeLimitExceeded only at "
                                 f"{_seconds(interactive.soft_limit)}; a person waits there, so it needs at most "
                                 f"{_seconds(INTERACTIVE_AT_MOST)}")
    else:
        symptoms[INTERACTIVE] = _preempted(probes.main, INTERACTIVE) or _timing(interactive)
    message = _report("", symptoms)
    assert not message, message


def test_the_budget_in_settings_is_the_one_in_force(probes):
    """Change the default budget in settings.py, and the transactional queues' budget changes with it."""
    soft, hard = probes.changed_settings.budget()
    probes.main.require()
    who = f"{probes.how_changed}, a task without its own limit"
    # A settings.py without a budget fails the check above; there is nothing to follow here.
    symptoms = {queue: _limits(probes.past_budget[queue].outcome(), soft, hard, who) if soft and hard else None
                for queue in TRANSACTIONAL}
    message = _report("transactional ", symptoms)
    assert not message, message
