"""The month-end review: a batch agent run that works through one model call per open item.

Nobody waits on the screen for this one, but the bookkeeper reads its
result in the morning. A step the model cannot answer is recorded as
failed and the run goes on with the next one; the run ends `succeeded`
after the loop.

The task declares a 180 s soft limit, and `celery inspect` reports it.

Goal: the run ends within its 180 s budget in a final state, on the
threads pool too. When the budget runs out it ends `failed` with a
message that says how many steps it finished, such as "timed out after 12
of 30 steps". A failed step still costs only that step.
"""

import logging

import openai
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_record_failure, job_start
from kontor.celery_app import app

from lab6_assistant.model_calls import ask

log = logging.getLogger(__name__)


# Three minutes covers a month's thirty open items at the model's usual pace; one more minute to wind down.
@app.task(name="kontor.assistant.review_month", soft_time_limit=180, time_limit=240)
def review_month(run_id: int) -> None:
    """Ask the model about every open item of the month and store its notes."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    for number, instruction in enumerate(run.steps, start=1):
        # TODO: the run must end within its budget, as the goal above says.
        try:
            answer = ask(f"Month-end review for {run.goal}\nItem {number}: {instruction}")
        except openai.APIError as exc:
            log.warning("review %d, step %d failed: %r", run.pk, number, exc)
            job_record_failure(run, f"step {number}", exc)
            continue
        AgentStep.objects.create(run=run, index=number, output=answer)
        job_item_done(run)
    job_mark_completed(run)
