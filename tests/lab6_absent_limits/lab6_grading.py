"""What lab 6's checks share: the promise, the questions and the review, and how to read how each one ended."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass

from budgetlab import clock
from budgetlab.workers import FAST_FLAGS
from kontor.books.models import AgentRun, AgentStep, Company

SLUG = "lab6_absent_limits"
MODULES = [f"{SLUG}.assistant", f"{SLUG}.review"]
SETTINGS = f"{SLUG}.settings"
QUESTION_TASK = "kontor.assistant.answer_question"
REVIEW_TASK = "kontor.assistant.review_month"

# The product's promises, in production seconds, as the lab's docstrings state them.
PROMISE = 45.0
REVIEW_BUDGET = 180.0
# How far past a promise an ending may land and still count as kept, and how long a task may
# wait for a free thread, in production seconds: the final database write and a busy machine's
# scheduling take real milliseconds, which the lab clock turns into production seconds.
TOLERANCE = 20.0
REVIEW_TOLERANCE = 20.0
# Lab 6 runs on a clock at most 50 times faster than production, whatever the workshop's clock:
# each model call here is a real HTTP request through the openai client, and a fresh prefork
# child's first task touches pages it shares with its master; real milliseconds that a 200x
# clock would turn into seconds of a 45 s promise. BUDGETLAB_CLOCK=1 stays real time.
SLOWEST_SCALE = 0.02


def time_scale() -> float:
    """Return the wall seconds per production second that lab 6's worker, service and checks run on."""
    return max(clock.factor(), SLOWEST_SCALE)


def to_wall(production_seconds: float) -> float:
    return production_seconds * time_scale()


def to_production(wall_seconds: float) -> float:
    return wall_seconds / time_scale()
# Wall seconds a check waits beyond a promise and its tolerance before it reads what happened:
# a late ending is measured, not guessed, as long as it arrives within this.
SLACK = 2.0
POLL = 0.02

# A healthy provider answers each call in this many production seconds: a question of three steps
# takes about 12 s, the review's thirty steps about 120 s, both well inside their budgets.
HEALTHY_LATENCY = 4.0
QUESTION_STEPS = ("Find the invoices the question is about", "Check them against the bookings",
                  "Write the answer for the customer")
REVIEW_STEPS = 30
# Questions asked in each phase: fewer than the worker's twenty threads, with the review beside them.
BEFORE, DURING, AFTER = 5, 12, 12


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
    waited: float | None  # production seconds from sending the task until a thread started it

    @property
    def name(self) -> str:
        return f"run {self.run_id}"

    @property
    def final(self) -> bool:
        return self.status in (AgentRun.COMPLETED, AgentRun.FAILED)


def company() -> Company:
    return Company.objects.order_by("id").first()


def create_question(number: int) -> AgentRun:
    """Create a question as Kontor's web process would, before the task is sent."""
    return AgentRun.objects.create(company=company(), goal=f"Why was invoice {1000 + number} charged twice?",
                                   steps=list(QUESTION_STEPS))


def create_review() -> AgentRun:
    return AgentRun.objects.create(company=company(), goal="the month of March",
                                   steps=[f"Explain open item {n}" for n in range(1, REVIEW_STEPS + 1)])


def read_ending(run: AgentRun, sent_at: float) -> Ending:
    run.refresh_from_db()
    seconds = waited = None
    if run.started_at is not None:
        waited = to_production(run.started_at.timestamp() - sent_at)
        if run.finished_at is not None and run.status in (AgentRun.COMPLETED, AgentRun.FAILED):
            seconds = to_production(run.finished_at.timestamp() - run.started_at.timestamp())
    return Ending(run_id=run.pk, status=run.status, message=run.message, steps_total=len(run.steps),
                  steps_stored=AgentStep.objects.filter(run=run).count(), items_done=run.items_done,
                  seconds=seconds, waited=waited)


def has_started(run_id: int) -> bool:
    return AgentRun.objects.filter(pk=run_id, started_at__isnull=False).exists()


def all_final(*run_ids: int) -> bool:
    """Whether every one of these runs has ended (one query, however many runs)."""
    final = AgentRun.objects.filter(pk__in=run_ids, status__in=(AgentRun.COMPLETED, AgentRun.FAILED))
    return final.count() == len(set(run_ids))


def wait_until(predicate, deadline: float) -> bool:
    """Poll `predicate` until it holds or the monotonic `deadline` passes; return whether it held."""
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def worker_argv(queue: str, hostname: str) -> list[str]:
    """The worker's command line: no pool or concurrency flag, so the lab's settings decide both."""
    return [sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker", "-Q", queue, "-n", hostname,
            "-l", "INFO", *FAST_FLAGS]


TRY_AGAIN = re.compile(r"try\s+again", re.IGNORECASE)
COUNT = re.compile(r"(\d[\d,.]*)\s+of\s+(\d[\d,.]*)")


def counts_in(message: str) -> tuple[int, int] | None:
    """Return the (done, total) pair a message states, as in "timed out after 12 of 60 steps"."""
    match = COUNT.search(message)
    if not match:
        return None
    done, total = (int(re.sub(r"[,.]", "", group)) for group in match.groups())
    return done, total


def late(ending: Ending, promise: float) -> str | None:
    """Describe how an ending missed its promise; None if it kept it.

    A run's time counts from its start, as a soft limit's does: how long a
    task waited for a thread depends on the machine's load as much as on the
    code, so stuck threads are judged by the calls they still hold instead.
    """
    tolerance = TOLERANCE if promise == PROMISE else REVIEW_TOLERANCE
    if ending.waited is None:
        return f"{ending.name} never started: every thread of the worker was busy"
    if ending.seconds is not None and ending.seconds <= promise + tolerance:
        return None
    if ending.seconds is None:
        return (f"{ending.name} was still '{ending.status}' {promise + tolerance:g} s after it started "
                f"({ending.items_done} of {ending.steps_total} steps done)")
    return f"{ending.name} ended '{ending.status}' only after {ending.seconds:.0f} s"
