"""The interactive assistant: a person asks a question and waits while the agent works through its steps.

Each question is an AgentRun of a few steps, one model call each. The run
ends `succeeded` with every step's answer stored, or `failed` with a
message for the person asking.

Kontor promises an answer, or a clear "please try again", within 45
seconds of the question. The task declares a 45 s soft limit, and
`celery inspect` reports it; run `budgetlab run 6` and compare that with
what happens on this worker when the model provider has a slow
afternoon: calls hang for minutes, and every thread of the queue ends up
waiting on a call nobody is waiting for any more.

Goal: every question ends, `succeeded` or `failed` with a message that
tells the person to try again, within 45 s of being asked, on the threads
pool too, and even while the provider hangs. When the provider is healthy
again, so is the assistant: its threads are free and questions succeed.
"""

import logging

import openai
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_mark_failed, job_start
from kontor.celery_app import app

from lab6_assistant.model_calls import ask

log = logging.getLogger(__name__)

TRY_AGAIN = "The assistant could not answer just now; please try again in a minute."


# The product promise: an answer, or "try again", within 45 s of the question.
# Fifteen more seconds for the hard limit to clean up after a task that ignores the soft one.
@app.task(name="kontor.assistant.answer_question", soft_time_limit=45, time_limit=60)
def answer_question(run_id: int) -> None:
    """Work through the steps of one question and store every answer."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, len(run.steps))
    try:
        for number, instruction in enumerate(run.steps, start=1):
            # TODO: the person asking waits for this loop; see the goal above.
            answer = ask(f"Question: {run.goal}\nStep {number}: {instruction}")
            AgentStep.objects.create(run=run, index=number, output=answer)
            job_item_done(run)
    except openai.APIError as exc:
        log.warning("question %d: the model failed: %r", run.pk, exc)
        job_mark_failed(run, TRY_AGAIN)
        return
    job_mark_completed(run)
