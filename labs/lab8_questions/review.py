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

import openai
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_record_failure, job_start
from kontor.celery_app import app

from lab8_questions.model_calls import ask

log = logging.getLogger(__name__)


def ask_or_retry_later(task, prompt: str) -> str:
    """Ask the model; when the provider is busy, ask Celery to run the task again later."""
    try:
        return ask(prompt)
    except (openai.RateLimitError, openai.InternalServerError) as exc:
        # TODO: what does task.retry() raise, and who catches it?
        raise task.retry(exc=exc)


# Ten minutes is far more than a month's open items need at the model's usual pace.
@app.task(bind=True, name="kontor.assistant.review_month", soft_time_limit=600, time_limit=660)
def review_month(self, run_id: int) -> None:
    """Ask the model about every open item of the month and store its notes."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    for number, instruction in enumerate(run.steps, start=1):
        try:
            answer = ask_or_retry_later(self, f"Month-end review for {run.goal}\n{instruction}")
            AgentStep.objects.create(run=run, index=number, output=answer)
            job_item_done(run)
        except Exception as exc:
            log.warning("review %d, item %d failed: %r", run.pk, number, exc)
            job_record_failure(run, f"item {number}", exc)
    job_mark_completed(run)
