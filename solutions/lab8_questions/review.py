"""The month-end review: a batch that asks the model about every open item of a month.

Nobody waits on the screen for this one; the bookkeeper reads its result
in the morning. An item the model cannot answer is recorded as failed and
the review goes on with the next one; the review ends `succeeded` after
the loop. When the provider answers 429 or 503, the helper below asks
Celery to try again later.

Goal: the review ends once, in a final state, with every item either
answered once or recorded as failed; an item that keeps failing is
retried a bounded number of times, then recorded, and the review goes on.
Once the review has ended, nothing is still waiting to run it again, and
no item it answered is asked again.
"""

import logging
from random import uniform
import time

import openai
from celery.exceptions import SoftTimeLimitExceeded
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import (job_item_done, job_mark_completed, job_mark_failed, job_record_failure,
                                   job_start)
from kontor.celery_app import app

from lab8_questions.model_calls import ask

log = logging.getLogger(__name__)

# Tries per item: a busy provider usually lets one through by the third; an item that fails
# three times is recorded and left for the bookkeeper.
ATTEMPTS = 3
# After a 503 the provider names no wait; a few seconds lets it catch its breath.
SERVER_ERROR_WAIT = 5.0
# Each wait gets a random extra of up to this, so the review's calls do not fall in step with others'.
SPREAD = 5.0


def retry_delay(exc: openai.APIStatusError) -> float:
    """Return how long to wait before trying an item again: at least what Retry-After asks, spread at random."""
    try:
        asked = float(exc.response.headers.get("retry-after", 0))
    except ValueError:
        asked = 0.0
    return max(SERVER_ERROR_WAIT, asked) + uniform(0, SPREAD)


def ask_patiently(prompt: str) -> str:
    """Ask the model, trying again in this task (not a new message) when the provider is busy.

    A retry of the whole task would run every item again; and task.retry()
    raises celery.exceptions.Retry, an Exception, which the loop's per-item
    handler would swallow while the re-run is already queued.
    """
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return ask(prompt)
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            if attempt == ATTEMPTS:
                raise
            time.sleep(retry_delay(exc))
    raise AssertionError("unreachable")


# Ten minutes is far more than a month's open items need at the model's usual pace.
@app.task(bind=True, name="kontor.assistant.review_month", soft_time_limit=600, time_limit=660)
def review_month(self, run_id: int) -> None:
    """Ask the model about every open item of the month and store its notes."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    for number, instruction in enumerate(run.steps, start=1):
        try:
            # Retries happen inside ask_patiently; an item that exhausts them lands in the handler below.
            answer = ask_patiently(f"Month-end review for {run.goal}\n{instruction}")
            AgentStep.objects.create(run=run, index=number, output=answer)
            job_item_done(run)
        except SoftTimeLimitExceeded:
            job_mark_failed(run, f"timed out after {run.items_done} of {len(run.steps)} items")
            raise
        except Exception as exc:
            log.warning("review %d, item %d failed: %r", run.pk, number, exc)
            job_record_failure(run, f"item {number}", exc)
    job_mark_completed(run)
