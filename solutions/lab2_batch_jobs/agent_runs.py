"""Agent run: an agent works through a list of steps, one model call each.

A run sits in `running` while the task works through the steps and ends
`succeeded` after the loop. A step the model cannot answer is recorded as
failed, and the agent goes on with the next one.

A person waits for an agent run, so its budget is tight, and a run with
many steps outlasts it. The run then stays `running` for good.

Goal: when the soft limit fires, the run ends `failed` with a message that
says how many steps it finished, such as "timed out after 12 of 40 steps",
and the task itself still ends with SoftTimeLimitExceeded. A failed step
still costs only that step.
"""

import logging

from celery.exceptions import SoftTimeLimitExceeded
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_mark_failed, job_record_failure, job_start
from kontor.celery_app import app

from lab2_batch_jobs.model_calls import ask_model

log = logging.getLogger(__name__)


# Someone is waiting for the answer: after five minutes of model calls the
# run should stop and say how far it got. One more minute to wind down.
@app.task(name="kontor.agents.run_agent", soft_time_limit=300, time_limit=360)
def run_agent(run_id: int) -> None:
    """Work through every step of an agent run."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    try:
        for number, instruction in enumerate(run.steps, start=1):
            try:
                run_step(run, number, instruction)
            except SoftTimeLimitExceeded:
                raise  # not this item's fault: the runtime is asking the task to leave
            except Exception as exc:
                log.warning("step %d failed: %r", number, exc)
                job_record_failure(run, f"step {number}", exc)
        job_mark_completed(run)
    except SoftTimeLimitExceeded:
        # Wherever the limit landed (an item's call or query, the handler that records a
        # failure, the final write), end the job where a person can see how far it got,
        # then re-raise, so the task ends inside the soft window, before the hard kill.
        job_mark_failed(run, f"timed out after {run.items_done:,} of {run.items_total:,} steps")
        raise


def run_step(run: AgentRun, number: int, instruction: str) -> None:
    """Ask the model to carry out one step and store its answer."""
    answer = ask_model(f"Goal: {run.goal}\nStep {number}: {instruction}", key=f"step-{number}")
    if answer is None:
        raise ValueError(f"no answer from the model for step {number}")
    AgentStep.objects.create(run=run, index=number, output=answer)
    job_item_done(run)
