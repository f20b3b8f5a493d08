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
REVIEW_BUDGET = 600.0
# How far past a promise an ending may land and still count as kept, in production seconds:
# the worker picking the task up and the final database write take real milliseconds,
# which the lab clock turns into production seconds, and more of them on a busy machine.
TOLERANCE = 20.0
REVIEW_TOLERANCE = 30.0
# Wall seconds a check waits beyond a promise and its tolerance before it reads what happened:
# a late ending is measured, not guessed, as long as it arrives within this.
SLACK = 2.0
POLL = 0.01

# A healthy provider answers each call in this many production seconds: a question of three steps
# takes about 12 s, the review's sixty steps about 240 s, both well inside their budgets.
HEALTHY_LATENCY = 4.0
QUESTION_STEPS = ("Find the invoices the question is about", "Check them against the bookings",
                  "Write the answer for the customer")
REVIEW_STEPS = 60
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
    seconds: float | None  # production seconds from sending the task to the run's final write

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
    seconds = None
    if run.finished_at is not None and run.status in (AgentRun.COMPLETED, AgentRun.FAILED):
        seconds = clock.to_production(run.finished_at.timestamp() - sent_at)
    return Ending(run_id=run.pk, status=run.status, message=run.message, steps_total=len(run.steps),
                  steps_stored=AgentStep.objects.filter(run=run).count(), items_done=run.items_done,
                  seconds=seconds)


def is_final(run_id: int) -> bool:
    return AgentRun.objects.filter(pk=run_id, status__in=(AgentRun.COMPLETED, AgentRun.FAILED)).exists()


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


def late(ending: Ending, promise: float) -> str:
    """Describe an ending that missed its promise."""
    if ending.seconds is None:
        return (f"{ending.name} was still '{ending.status}' {promise:g} s after it was sent "
                f"({ending.items_done} of {ending.steps_total} steps done)")
    return f"{ending.name} ended '{ending.status}' only after {ending.seconds:.0f} s"
