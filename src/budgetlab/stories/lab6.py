"""Lab 6's story, shared by `budgetlab run 6` and its checks: one afternoon of the assistant on the threads pool.

One worker runs with the lab's own settings (pool and concurrency as the
target chose them) against a real model service, called through the
official openai client. The month-end review starts while the provider is
healthy and five questions are asked; then the provider hangs and twelve
more are asked; then it recovers and twelve more are asked; then it hangs
again until the review has run out of budget. An Ending is how one run
ended, read once, in production seconds.
"""

from __future__ import annotations

import math
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from budgetlab import labs
from budgetlab.harness import stalls
from budgetlab.harness.workers import FAST_FLAGS, tree_of, unique_hostname
from budgetlab.inworker import clock
from budgetlab.stories.reading import Unmeasured, wait_until
from budgetlab.stories.stallmeter import DatabaseBackends, StallMeter

SLUG = labs.slug_of(6)
MODULES = [f"{SLUG}.assistant", f"{SLUG}.review"]
SETTINGS = f"{SLUG}.settings"
QUESTION_TASK = "kontor.assistant.answer_question"
REVIEW_TASK = "kontor.assistant.review_month"

# An AgentRun in one of these statuses has ended; read as plain strings, Django set up or not.
FINAL = ("succeeded", "failed")
# The product's promises, in production seconds, as the lab's docstrings state them.
PROMISE = 45.0
REVIEW_BUDGET = 180.0
# How far past a promise an ending may land and still count as kept, in production seconds:
# the final database write and a busy machine's scheduling take real milliseconds, which the
# lab clock turns into production seconds.
TOLERANCE = 20.0
REVIEW_TOLERANCE = 20.0
# Lab 6 runs on a clock at most 50 times faster than production, whatever the workshop's clock:
# each model call here is a real HTTP request through the openai client, and a fresh prefork
# child's first task touches pages it shares with its master; real milliseconds that a 200x
# clock would turn into seconds of a 45 s promise. BUDGETLAB_CLOCK=1 stays real time.
SLOWEST_SCALE = 0.02


def time_scale() -> float:
    """Return the wall seconds per production second that lab 6's worker, service and checks run on."""
    return clock.at_most_as_fast_as(SLOWEST_SCALE)


def to_wall(production_seconds: float) -> float:
    return clock.to_wall(production_seconds, time_scale())


def worker_clock() -> float:
    """The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on."""
    return time_scale()


# What the lab's code imports in its workers besides Celery, Django and the clients every worker imports:
# the check's zygote imports it too (budgetlab.harness.zygote).
WORKER_IMPORTS = ("openai",)


def to_production(wall_seconds: float) -> float:
    return clock.to_production(wall_seconds, time_scale())


# Wall seconds a check waits beyond a promise and its tolerance before it reads what happened:
# for a run that has not started, from the moment it was sent (a busy machine may be slow to hand
# it to a thread); for a run that has, from its start (its final write may take a moment to land).
# A late ending is measured, not guessed, as long as it arrives within this.
SLACK = 2.0
STARTED_SLACK = 1.0

# A healthy provider answers each call in this many production seconds: a question of three steps
# takes about 12 s, the review's thirty steps about 120 s, both well inside their budgets.
HEALTHY_LATENCY = 4.0
QUESTION_STEPS = ("Find the invoices the question is about", "Check them against the bookings",
                  "Write the answer for the customer")
REVIEW_STEPS = 30
# Questions asked in each phase: fewer than the worker's twenty threads, with the review beside them.
BEFORE, DURING, AFTER = 5, 12, 12
# The warm-up questions (see warm_up): their invoice number, and at most how many (one a prefork child).
WARM_UP_NUMBER = -1
WARM_UP_MOST = 32
# The checks' held questions (see Afternoon.held): one step each; the database holds one write of each this
# many production seconds, as a lock held elsewhere would: the answer's, once the model has given it, and the
# one that ends the run. Each comes about one healthy call into the run and the hold ends past the promise, so
# a soft limit of 45 s lands inside the write. Their invoice numbers, and the write held in a check's words:
HELD_NUMBERS = {"answer": -2, "ending": -3}
HELD_WRITES = {"answer": "its answer's write", "ending": "the write that ends it"}
HELD_SECONDS = 56.0
# The checks' held reviews (see Afternoon.held_reviews), started with the review: the database holds one write
# of each until this many production seconds past the review's budget, so a soft limit lands inside it, and a
# run that no limit interrupts (threads) gets it back in time to end. A thirty-step review's first answer and a
# one-step review's ending, each written about one healthy call into the run; by the write held, the month each
# reviews, its steps, and the write in a check's words:
HELD_REVIEW_PAST = 15.0
HELD_REVIEWS = {"answer": ("February", REVIEW_STEPS), "ending": ("January", 1)}
HELD_REVIEW_WRITES = {"answer": "its first answer's write", "ending": "the write that ends it"}


@dataclass
class Ending:
    """How one run ended, read once, so checks compare plain values."""

    run_id: int
    status: str
    message: str
    steps_total: int
    steps_stored: int
    items_done: int
    seconds: float | None  # production seconds from the run's start to its final write
    waited: float | None  # production seconds from sending the task until a thread started it (None: never)
    # Production seconds from the run's start to the moment it was read (None: it never started). What a busy
    # machine can have added, in production seconds: what the worker, the database's backends and the model
    # service waited for a core (each one's most kept thread, added up) from the run's promise to its ending or
    # that moment (see StallMeter); and how long after the run's start the pool began counting a soft limit no
    # longer than the promise, where the worker logged one firing for it.
    read_after: float | None = None
    lost: float = 0.0
    counted_late: float = 0.0
    soft_limit: float | None = None
    started: float | None = None  # production timestamp of its start
    lost_running: float = 0.0  # as `lost`, from the run's start
    # Production seconds from the question's creation (when the person asked it) to its final write; None: not final.
    asked_for: float | None = None
    # For a run left open whose task the pool's hard limit ended after its soft limit: the production seconds
    # between the two firings, and how many of them the watched processes waited for a core (None: no such kill).
    kill_window: float = 0.0
    killed_lost: float | None = None
    # For such a run, whether its code called the model after the soft limit fired (None: cannot tell).
    called_after_soft: bool | None = None

    @property
    def name(self) -> str:
        return f"run {self.run_id}"

    @property
    def final(self) -> bool:
        return self.status in FINAL


def _models():
    # Imported when first needed: Django is set up by whoever plays the story.
    from kontor.books import models

    return models


def create_question(number: int, steps: tuple[str, ...] = QUESTION_STEPS, pk: int | None = None):
    """Create a question as Kontor's web process would, before the task is sent (with an id reserved earlier)."""
    m = _models()
    return m.AgentRun.objects.create(id=pk, company=m.Company.objects.order_by("id").first(),
                                     goal=f"Why was invoice {1000 + number} charged twice?", steps=list(steps))


def create_review(month: str = "March", steps: int = REVIEW_STEPS):
    m = _models()
    return m.AgentRun.objects.create(company=m.Company.objects.order_by("id").first(), goal=f"the month of {month}",
                                     steps=[f"Explain open item {n}" for n in range(1, steps + 1)])


# The line a pool logs when a soft limit fires (Celery 5.6's Request.on_timeout, celery/worker/request.py:532), in
# Celery's default worker log format; its time is the worker's, production time on the lab clock, to the millisecond.
def _limit_logged(kind: str) -> re.Pattern:
    return re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}): \w+/MainProcess\] " + kind +
                      r" time limit \((\d+(?:\.\d+)?)s\) exceeded for [\w.]+\[([\w-]+)\]", re.MULTILINE)


SOFT_LIMIT_LOGGED, HARD_LIMIT_LOGGED = _limit_logged("Soft"), _limit_logged("Hard")


def soft_limits_logged(text: str, logged: re.Pattern = SOFT_LIMIT_LOGGED) -> dict[str, tuple[float, float]]:
    """Map each task id whose soft limit (or, with HARD_LIMIT_LOGGED, hard limit) the worker logged firing to
    (the limit, the production time it fired)."""
    return {task_id: (float(limit), time.mktime(time.strptime(stamp, "%Y-%m-%d %H:%M:%S")) + int(ms) / 1000)
            for stamp, ms, limit, task_id in logged.findall(text)}


def hard_limits_logged(text: str) -> dict[str, tuple[float, float]]:
    """As soft_limits_logged, for the hard limits the worker logged ending tasks."""
    return soft_limits_logged(text, HARD_LIMIT_LOGGED)


@dataclass
class Watch:
    """What a check sees beside the runs themselves: the stall meter, the worker's log, each run's task id."""

    meter: StallMeter
    log: Path
    calls: Callable[[], list[dict]] = list  # the model service's log of calls (ModelService.calls)
    task_ids: dict[int, str] = field(default_factory=dict)

    def send(self, rig, task: str, run_id: int, queue: str) -> float:
        """Send a run's task, note its id, and return the wall time it was sent."""
        sent = time.time()
        self.task_ids[run_id] = rig.client.send_task(task, args=[run_id], queue=queue).id
        return sent

    def limits_logged(self) -> tuple[dict[str, tuple[float, float]], dict[str, tuple[float, float]]]:
        """The soft and the hard limits the worker has logged firing, by task id (see soft_limits_logged), from
        one read of its log."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return {}, {}
        return soft_limits_logged(text), hard_limits_logged(text)

    def limits_fired(self, run_id: int) -> tuple[tuple[float, float] | None, tuple[float, float] | None]:
        """The soft and the hard limit the worker logged firing for a run's task, each with when (production
        time); None for one it did not log."""
        task_id = self.task_ids.get(run_id, "")
        soft, hard = self.limits_logged()
        return soft.get(task_id), hard.get(task_id)

    def called_after(self, goal: str, wall: float) -> bool | None:
        """Whether a run whose prompts carry `goal` called the model after the wall time `wall`; None when no call
        of the service's carried it (the code words its prompts otherwise)."""
        calls = [call["wall"] for call in self.calls() if goal in call["prompt"]]
        return any(at > wall for at in calls) if calls else None


def read_ending(run, sent_at: float, promise: float, watch: Watch | None = None) -> Ending:
    """Read how `run` ended; `promise` is what late() will judge it by, from which the watch's readings count."""
    AgentRun, AgentStep = _models().AgentRun, _models().AgentStep
    read_at = time.time()
    run.refresh_from_db()
    seconds = waited = read_after = soft_limit = asked_for = killed_lost = called_after_soft = None
    kill_window = 0.0
    lost = counted_late = lost_running = 0.0
    if run.started_at is not None:
        # The worker writes its timestamps on the lab clock; `sent_at` is the grader's wall time.
        started = run.started_at.timestamp()
        waited = started - clock.production_time(sent_at, time_scale())
        read_after = clock.production_time(read_at, time_scale()) - started
        if run.finished_at is not None and run.status in (AgentRun.COMPLETED, AgentRun.FAILED):
            seconds = run.finished_at.timestamp() - started
            # Both on lab 6's clock: this process created the question, the worker wrote its end.
            asked_for = run.finished_at.timestamp() - run.created_at.timestamp()
        if watch is not None:
            ran = seconds or read_after
            until = clock.wall_time(started + ran, time_scale())
            lost_running = to_production(watch.meter.lost(clock.wall_time(started, time_scale()), until))
            # What may excuse lateness is read only for a run that went past its promise (the log once each).
            if ran > promise:
                lost = to_production(watch.meter.lost(clock.wall_time(started + promise, time_scale()), until))
                fired, killed = watch.limits_fired(run.pk)
                # Only a limit that fired while the run was open counts (a log in another time zone would not).
                if counted := _counted(fired, promise, started, until=started + ran + 1.0):
                    soft_limit, counted_late = counted
                if seconds is None and fired is not None and killed is not None and fired[1] <= killed[1]:
                    kill_window = killed[1] - fired[1]
                    killed_lost = to_production(watch.meter.lost(clock.wall_time(fired[1], time_scale()),
                                                                 clock.wall_time(killed[1], time_scale())))
                    called_after_soft = watch.called_after(run.goal, clock.wall_time(fired[1], time_scale()))
    return Ending(run_id=run.pk, status=run.status, message=run.message, steps_total=len(run.steps),
                  steps_stored=AgentStep.objects.filter(run=run).count(), items_done=run.items_done,
                  seconds=seconds, waited=waited, read_after=read_after, lost=lost, counted_late=counted_late,
                  soft_limit=soft_limit, started=None if run.started_at is None else run.started_at.timestamp(),
                  lost_running=lost_running, asked_for=asked_for, kill_window=kill_window,
                  killed_lost=killed_lost, called_after_soft=called_after_soft)


def _counted(fired: tuple[float, float] | None, promise: float, started: float,
             until: float) -> tuple[float, float] | None:
    """For a soft limit the worker logged firing (the limit, when) within `promise`, counted from after the run's
    start, `started`, and fired by `until` (production times): the limit, and how long after the start the pool
    began counting it (an Ending's soft_limit and counted_late); None for any other."""
    if fired is None or not (fired[0] <= promise and started + fired[0] <= fired[1] <= until):
        return None
    return fired[0], fired[1] - fired[0] - started


def count_late_limits(endings: list[Ending], promise: float, watch: Watch) -> None:
    """For each run still open when it was read, and for which the worker had logged no soft limit, note how late
    the pool began counting a soft limit within `promise` that it logged since (counted_late; see late()).

    A busy master fires its timers late: a rehearsal's prefork fix left a question 'running' at its read with no
    soft limit logged yet. The log is read once, at the end of the afternoon.
    """
    still_open = [ending for ending in endings
                  if ending.seconds is None and ending.soft_limit is None and ending.started is not None]
    if not still_open:
        return
    soft, _hard = watch.limits_logged()
    for ending in still_open:
        if counted := _counted(soft.get(watch.task_ids.get(ending.run_id, "")), promise, ending.started,
                               until=math.inf):
            ending.soft_limit, ending.counted_late = counted


def has_started(run_id: int) -> bool:
    return _models().AgentRun.objects.filter(pk=run_id, started_at__isnull=False).exists()


def all_decided(sent: dict[int, float], allowed: float, watch: Watch | None = None) -> bool:
    """Whether every run has ended, or run past its promise and the slack, or waited that long to start.

    `sent` maps each run's id to the wall time its task was sent; `allowed`
    is its promise and tolerance in production seconds. Each run gets its
    own deadline, so one a busy machine started late is not read early,
    and every wall second the watch's meter saw the machine take meanwhile.
    """
    now = time.time()
    for run_id, status, started_at in _models().AgentRun.objects.filter(pk__in=sent).values_list(
            "pk", "status", "started_at"):
        if status in FINAL:
            continue
        if started_at is None:
            since, deadline = sent[run_id], sent[run_id] + to_wall(allowed) + SLACK
        else:
            since = clock.wall_time(started_at.timestamp(), time_scale())
            deadline = since + to_wall(allowed) + STARTED_SLACK
        if now < deadline + (watch.meter.lost(since, now) if watch is not None else 0.0):
            return False
    return True


def all_final(*run_ids: int) -> bool:
    """Whether every one of these runs has ended (one query, however many runs)."""
    final = _models().AgentRun.objects.filter(pk__in=run_ids, status__in=FINAL)
    return final.count() == len(set(run_ids))


def worker_argv(queue: str, hostname: str) -> list[str]:
    """The worker's command line: no pool or concurrency flag, so the lab's settings decide both."""
    return [sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker", "-Q", queue, "-n", hostname,
            "-l", "INFO", *FAST_FLAGS]


TRY_AGAIN = re.compile(r"try\s+again", re.IGNORECASE)
def late(ending: Ending, promise: float, tolerance: float | None = None) -> str | None:
    """Describe how an ending missed its promise; None if it kept it.

    A run's time counts from its start, as a soft limit's does: how long a
    task waited for a thread depends on the machine's load as much as on the
    code, so stuck threads are judged by the calls they still hold instead.
    The tolerance is the question's, or the review's for its budget.
    """
    if tolerance is None:
        tolerance = TOLERANCE if promise == PROMISE else REVIEW_TOLERANCE
    if ending.waited is None:
        return f"{ending.name} never started: every thread of the worker was busy"
    if ending.seconds is not None and ending.seconds <= promise + tolerance:
        return None
    if ending.seconds is None:
        symptom = (f"{ending.name} was still '{ending.status}' {promise + tolerance:g} s after it started "
                   f"({ending.items_done} of {ending.steps_total} steps done)")
    else:
        symptom = f"{ending.name} ended '{ending.status}' only after {ending.seconds:.0f} s"
    if ending.killed_lost is not None:
        # Between the two limits the code has a few tenths of a wall second to end the run (15 s at 50x); a
        # machine that kept the processes it needs waiting for half of that left the code no time. Only for a
        # run whose work was all done, or whose code asked the model nothing more once its soft limit fired:
        # code that went on after its soft limit had steps left to do, and asked for them.
        symptom += f": the pool's hard limit ended its task {ending.kill_window:.0f} s after its soft limit fired"
        stopped = ("with every answer stored" if ending.steps_stored == ending.steps_total
                   else "having asked the model nothing more" if ending.called_after_soft is False else "")
        if stopped and ending.killed_lost >= 0.5 * ending.kill_window:
            return Unmeasured(f"{symptom}, {stopped}, while the worker, the database and the model service waited "
                              f"{ending.killed_lost:.0f} s of them in all for a core (is the machine very busy?)")
        return symptom
    # Past its promise a run is ending. When what the machine added covers how late it was (the worker kept
    # waiting for a core, or a right soft limit counted from late), the lateness is not the code's.
    over = (ending.seconds if ending.seconds is not None else ending.read_after or 0.0) - promise - tolerance
    if 0 < ending.lost + ending.counted_late and over <= ending.lost + ending.counted_late:
        added = []
        if ending.counted_late:
            added.append(f"the pool began counting its {ending.soft_limit:g} s soft limit {ending.counted_late:.0f} s "
                         "after the run started")
        if ending.lost:
            added.append(f"the worker, the database and the model service waited {ending.lost:.0f} s in all for a "
                         "core after its promise ran out")
        return Unmeasured(f"{symptom}, but {' and '.join(added)} (is the machine very busy?)")
    return symptom


def answered(ending: Ending) -> bool:
    """Whether a question succeeded with an answer for each of its steps."""
    return ending.status == "succeeded" and ending.steps_stored == ending.steps_total


def healthy_miss(ending: Ending, symptom: str, phase: list[Ending]) -> str | None:
    """Judge a question of `phase` that was not answered while the model was healthy: its symptom, the machine's
    (Unmeasured), or None.

    A question has PROMISE less its steps at a healthy pace to spare. When
    the worker, the database and the model service waited for a core that
    long in all while it ran, the machine took it. The page promises an answer within 45 s of
    the question, so a correct budget may count from the asking. When the
    question said try again that long after it was asked, and the machine
    took half of it before the code could act (the queue before a thread
    started it, and the measured waits for a core; the other half goes to
    a busy machine's overheads, which the meter sees only in part), that
    is what such a budget does, and the phase's other answers show the
    assistant works; with no answer in the phase, nothing shows it
    (Unmeasured). Code slow on its own ran most of the time itself.
    """
    spare = PROMISE - ending.steps_total * HEALTHY_LATENCY
    if ending.lost_running >= spare:
        return Unmeasured(f"{symptom}, but the worker, the database and the model service waited "
                          f"{ending.lost_running:.0f} s in all for a core while it ran (is the machine very busy?)")
    queued = None if ending.asked_for is None or ending.seconds is None else ending.asked_for - ending.seconds
    if (ending.status == "failed" and TRY_AGAIN.search(ending.message) and queued is not None
            and ending.asked_for >= spare and queued + ending.lost_running >= spare / 2):
        if any(answered(other) for other in phase):
            return None
        return Unmeasured(f"{symptom}, but it ended {ending.asked_for:.0f} s after it was asked (a thread started "
                          f"it {ending.waited:.0f} s after it was sent), when a budget counted from the question may "
                          f"have run out, and none of the {len(phase)} questions asked with it was answered "
                          "(is the machine very busy?)")
    return symptom


def review_untested(afternoon: Afternoon) -> Unmeasured | None:
    """Say so when the review answered every step before the model hung again: its budget was never put to the test."""
    review = afternoon.review
    if (review is None or review.status != "succeeded" or review.steps_stored != review.steps_total
            or review.seconds is None or afternoon.relapse_at is None
            or review.started + review.seconds > afternoon.relapse_at):
        return None
    return Unmeasured(f"{review.name} answered all {review.steps_total} steps before the model hung again, so its "
                      "budget was never put to the test (is the machine very busy?)")


@dataclass
class Held:
    """How a held question or review ended (see HELD_NUMBERS, HELD_REVIEWS), and whether its code reached the write
    the database held."""

    ending: Ending
    written: bool
    # A held review's: production seconds from its start to the end of its write's hold, when its code reached the
    # write. A write the machine kept from coming one healthy call in is held that much later too.
    hold_ended: float | None = None


@dataclass
class Afternoon:
    """How every run ended, and how many calls the provider still held for the worker after the spell."""

    before: list = field(default_factory=list)  # Ending of each question asked while the provider was healthy
    during: list = field(default_factory=list)  # ... while it hung
    after: list = field(default_factory=list)  # ... once it had recovered
    review: Ending | None = None  # the month-end review
    # Checks only (`budgetlab run 6` asks none): the questions asked with the recovered ones one of whose writes
    # the database held for HELD_SECONDS, by the write held (see HELD_NUMBERS).
    held: dict[str, Held] = field(default_factory=dict)
    # Checks only, likewise: the reviews started with the first, one of whose writes the database held until
    # HELD_REVIEW_PAST after the review's budget, by the write held (see HELD_REVIEWS).
    held_reviews: dict[str, Held] = field(default_factory=dict)
    held_after_spell: int = 0  # calls still held for a connected client once the spell's questions were over
    review_running: bool = False  # whether the review was still running at that moment
    relapse_at: float | None = None  # production time at which the model hung again for the rest of the afternoon


def play_afternoon(rig, service, queue: str, log, on_phase: Callable[[str], None] = lambda phase: None,
                   hostname: str | None = None, hold_a_write: bool = False) -> Afternoon:
    """Start the worker with the target's code and play the afternoon; `rig.django()` must be active.

    `on_phase` hears "worker", "healthy", "slow", "recovered", "relapse" and
    "done" as the afternoon moves on (the live view redraws on them).
    With `hold_a_write` (the checks) two more questions are asked with the
    recovered ones, and the database holds one's answer and the other's
    ending past the promise; two more reviews start with the first, and the
    database holds one's first answer and the other's ending past the
    review's budget: where a pool applies the soft limit, it lands in
    those writes.
    Raises the rig's WorkerDidNotStart when the target's code does not start.
    """
    # The records this process writes (the questions, the review) carry production time on lab 6's clock.
    # The meter stops before the backends' connection closes: only its thread asks them.
    with clock.running_at(time_scale()), DatabaseBackends(rig.database_url) as backends, StallMeter() as meter:
        watch = Watch(meter, Path(log), service.calls)
        return _play_afternoon(rig, service, queue, log, on_phase, hostname, hold_a_write, watch, backends)


def held_allowance() -> float:
    """Production seconds the held question may take: the promise, the time its write was held, the tolerance."""
    return PROMISE + HELD_SECONDS + TOLERANCE


def held_late(ending: Ending) -> str | None:
    """Describe how the held question missed its allowance (see held_allowance); None if it kept it."""
    return late(ending, PROMISE + HELD_SECONDS, TOLERANCE)


def held_review_allowance() -> float:
    """Production seconds a held review may take: its budget, the hold past it, the tolerance."""
    return REVIEW_BUDGET + HELD_REVIEW_PAST + REVIEW_TOLERANCE


def held_review_late(held: Held) -> str | None:
    """Describe how a held review missed its allowance (see held_review_allowance); None if it kept it."""
    return late(held.ending, held_review_until(held.hold_ended), REVIEW_TOLERANCE)


def held_review_until(hold_ended: float | None) -> float:
    """Production seconds from a held review's start until the database gave its write back: HELD_REVIEW_PAST past
    its budget, or later when the write itself came late (`hold_ended`, see Held)."""
    return max(REVIEW_BUDGET + HELD_REVIEW_PAST, hold_ended or 0.0)


def _hold_ended(stall: stalls.Stall, run) -> float | None:
    """Production seconds from `run`'s start to the end of the hold of its write (None: not reached, not started)."""
    at = stalls.fired_at(stall)
    run.refresh_from_db(fields=["started_at"])
    if at is None or run.started_at is None:
        return None
    # Whole seconds, rounded up: a symptom names the allowance as a person would.
    return math.ceil(clock.production_time(at + stall.seconds, time_scale()) - run.started_at.timestamp())


def _held_answer(run_id: int, name: str, seconds: float) -> stalls.Stall:
    """Hold the first answer written for run `run_id` in the database for `seconds` of production time (a stall;
    see harness.stalls)."""
    return stalls.Stall(name, _models().AgentStep._meta.db_table, "INSERT", f"NEW.run_id = {run_id}",
                        seconds=round(to_wall(seconds), 3))


def _held_ending(run_id: int, name: str, seconds: float) -> stalls.Stall:
    """Hold the write that ends run `run_id`, whatever status it writes, for `seconds` of production time; only
    the first: a handler's write after it is not held."""
    final = ", ".join(f"'{status}'" for status in FINAL)
    return stalls.Stall(name, _models().AgentRun._meta.db_table, "UPDATE",
                        f"NEW.id = {run_id} AND NEW.status IN ({final}) AND OLD.status IS DISTINCT FROM NEW.status",
                        seconds=round(to_wall(seconds), 3))


_HOLDS = {"answer": _held_answer, "ending": _held_ending}


def _reserve_run_id() -> int:
    """Take the next AgentRun id from its sequence, for a run created later with it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [_models().AgentRun._meta.db_table])
        return cursor.fetchone()[0]


def prefork_children(rig, hostname: str) -> int:
    """Return how many prefork children the worker runs, as `celery inspect stats` says; 0 for any other pool."""
    stats = (rig.client.control.inspect(destination=[hostname], timeout=2.0).stats() or {}).get(hostname, {})
    pool = stats.get("pool", {})
    size = pool.get("max-concurrency")
    if "prefork" not in str(pool.get("implementation", "")) or not isinstance(size, int) or size < 1:
        return 0
    return min(size, WARM_UP_MOST)


def warm_up(rig, queue: str, hostname: str, watch: Watch) -> None:
    """Have every prefork child answer one question, ungraded, before the afternoon's first.

    A fresh prefork child's first task pays for its start-up: the pages it
    shares with its master, its own database and HTTP connections. Real
    milliseconds, which the lab clock makes seconds of a 45 s promise, and
    on a machine loaded far past its cores many more: in two rehearsals of
    the suite the healthy questions of a correct prefork fix failed "try
    again" with 2 of 3 answers. Asked at once, the questions reach one idle
    child each; one step each is enough, and keeps the warm-up light.
    Threads, gevent and eventlet start nothing per task.
    """
    ask_and_wait(rig, queue, [create_question(WARM_UP_NUMBER, QUESTION_STEPS[:1])
                              for _ in range(prefork_children(rig, hostname))], PROMISE + TOLERANCE, watch)


def ask_and_wait(rig, queue: str, runs: list, allowed: float, watch: Watch) -> dict[int, float]:
    """Send every run's question at once and wait until each is final or past `allowed`; return when each was sent.

    The outer bound only guards against a clock gone wrong: every run is decided well before it.
    """
    sent = {run.pk: watch.send(rig, QUESTION_TASK, run.pk, queue) for run in runs}
    wait_until(lambda: all_decided(sent, allowed, watch), time.monotonic() + 2 * (to_wall(allowed) + SLACK))
    return sent


def _play_afternoon(rig, service, queue: str, log, on_phase: Callable[[str], None],
                    hostname: str | None, hold_a_write: bool, watch: Watch, backends: DatabaseBackends) -> Afternoon:
    service.set_mode("healthy", latency=HEALTHY_LATENCY)
    hostname = hostname or unique_hostname(rig.label)
    tree = rig.start_worker([queue], MODULES, settings_module=SETTINGS, log=log, argv=worker_argv(queue, hostname),
                            extra_env={"KONTOR_MODEL_BASE_URL": service.base_url, "BUDGETLAB_CLOCK": str(time_scale())})
    # The model service answers the worker's calls and the database its writes: while they wait for a core, so
    # does the run.
    watch.meter.watch(lambda: tree_of(tree.proc.pid), lambda: (service.proc.pid,), backends.pids)
    on_phase("worker")
    warm_up(rig, queue, hostname, watch)
    afternoon = Afternoon()

    def ask(first: int, count: int, promise: float = PROMISE, tolerance: float = TOLERANCE) -> list[Ending]:
        runs = [create_question(n) for n in range(first, first + count)]
        # Wait until every run is final or well past its promise, then read how each ended.
        sent = ask_and_wait(rig, queue, runs, promise + tolerance, watch)
        return [read_ending(run, sent[run.pk], promise, watch) for run in runs]

    review = create_review()
    review_sent = watch.send(rig, REVIEW_TASK, review.pk, queue)
    held_reviews, held_ids, held_stalls, review_stalls, held_reviews_sent = {}, {}, {}, {}, {}
    if hold_a_write:
        held_reviews = {write: create_review(month, steps) for write, (month, steps) in HELD_REVIEWS.items()}
        held_ids = {write: _reserve_run_id() for write in HELD_NUMBERS}
        # Every stall goes in now: creating a trigger waits for every write in progress on the table, so once a
        # held review's write is held, a trigger created later would wait with it (and hold up every answer).
        # Each held write comes one healthy call into its run; the hold ends HELD_REVIEW_PAST after the budget.
        review_stalls = {write: _HOLDS[write](run.pk, f"lab6_held_review_{write}",
                                              REVIEW_BUDGET + HELD_REVIEW_PAST - HEALTHY_LATENCY)
                         for write, run in held_reviews.items()}
        held_stalls = {write: _HOLDS[write](run_id, f"lab6_held_{write}", HELD_SECONDS)
                       for write, run_id in held_ids.items()}
        stalls.install([*review_stalls.values(), *held_stalls.values()])
        held_reviews_sent = {run.pk: watch.send(rig, REVIEW_TASK, run.pk, queue) for run in held_reviews.values()}
    # The first task a fresh worker takes pays for its start-up; no question should.
    wait_until(lambda: has_started(review.pk), time.monotonic() + 10)
    on_phase("healthy")
    afternoon.before = ask(0, BEFORE)

    service.set_mode("slow")
    on_phase("slow")
    afternoon.during = ask(BEFORE, DURING)
    # Every question of the spell is over: a call the provider still holds is one nobody waits for,
    # except the review's own. The worker gets the tolerance to let go of them.
    afternoon.review_running = not all_final(review.pk)
    wait_until(lambda: service.stats()["open"] <= int(not all_final(review.pk)),
               time.monotonic() + to_wall(TOLERANCE) + SLACK / 2)
    afternoon.held_after_spell = max(service.stats()["open"] - int(not all_final(review.pk)), 0)

    service.set_mode("healthy", latency=HEALTHY_LATENCY)
    on_phase("recovered")
    # Sent first, so that each one's call is answered while the provider is healthy; they are read at the end.
    held = {write: create_question(HELD_NUMBERS[write], QUESTION_STEPS[:1], pk=run_id)
            for write, run_id in held_ids.items()}
    held_sent = {run.pk: watch.send(rig, QUESTION_TASK, run.pk, queue) for run in held.values()}
    afternoon.after = ask(BEFORE + DURING, AFTER)

    # The provider relapses for the rest of the afternoon: more than the review has left of its budget.
    service.set_mode("slow")
    afternoon.relapse_at = clock.production_now(time_scale())
    on_phase("relapse")
    # Judged like a question: from its own start, so a review the slow spell kept running is read
    # a second past its budget instead of two seconds past its sending.
    review_allowed = REVIEW_BUDGET + REVIEW_TOLERANCE
    wait_until(lambda: all_decided({review.pk: review_sent}, review_allowed, watch),
               time.monotonic() + 2 * (to_wall(review_allowed) + SLACK))
    afternoon.review = read_ending(review, review_sent, REVIEW_BUDGET, watch)
    if held:
        wait_until(lambda: all_decided(held_sent, held_allowance(), watch),
                   time.monotonic() + 2 * (to_wall(held_allowance()) + SLACK))
        afternoon.held = {write: Held(read_ending(run, held_sent[run.pk], PROMISE + HELD_SECONDS, watch),
                                      stalls.fired(held_stalls[write]))
                          for write, run in held.items()}
    if held_reviews:
        wait_until(lambda: all_decided(held_reviews_sent, held_review_allowance(), watch),
                   time.monotonic() + 2 * (to_wall(held_review_allowance()) + SLACK))
        # A write that came late was held late (its hold runs from the write): each review gets its own hold's end.
        ended = {write: _hold_ended(review_stalls[write], run) for write, run in held_reviews.items()}
        for write, run in held_reviews.items():
            allowed = held_review_until(ended[write]) + REVIEW_TOLERANCE
            wait_until(lambda: all_decided({run.pk: held_reviews_sent[run.pk]}, allowed, watch),
                       time.monotonic() + 2 * (to_wall(allowed) + SLACK))
        afternoon.held_reviews = {
            write: Held(read_ending(run, held_reviews_sent[run.pk], held_review_until(ended[write]), watch),
                        stalls.fired(review_stalls[write]), ended[write])
            for write, run in held_reviews.items()}
    if hold_a_write:
        stalls.release()
    count_late_limits([*afternoon.before, *afternoon.during, *afternoon.after], PROMISE, watch)
    on_phase("done")
    return afternoon

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
# Counts, peaks and durations come from real HTTP calls racing on a busy machine: only the shape is stable.
_SHAPE_ONLY = ((r"\b\d+(?:\.\d+)?\b", "N"), (r">N s", "N s"), (r"\s+", " "))
TRANSCRIPTS = {"check-starter": {"masks": _SHAPE_ONLY}, "run": {"masks": _SHAPE_ONLY}}
