"""The interactive assistant: a person asks a question and waits for the answer.

The web view calls `ask_question` when a person asks; a worker runs
`answer_question`, one model call. When the provider answers 429 Too
Many Requests or 503, the task is tried again: Celery's autoretry does
that, with its defaults.

Kontor promises an answer, or a clear "please try again", within 60
seconds of the question. Each attempt declares a 45 s soft limit, and it
holds. Run `budgetlab run 8` and watch what happens to that promise on an
afternoon when twenty people ask at once and the provider rate-limits.

Goal, for every question, while the provider is healthy, rate-limited or
recovering:
- it ends, answered or failed with a message that tells the person to try
  again, within 60 s of being asked, counted across all its attempts;
- no attempt starts more than 60 s after the question was asked, and no
  retry of it is still waiting to run once it has ended;
- after a 429, the next attempt waits at least what Retry-After asks;
- questions refused together do not come back together: of their retries
  after a 429, never four in five within the same two seconds of waiting.
"""

import logging

import openai
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_mark_failed, job_start
from kontor.celery_app import app

from lab8_questions.model_calls import ask

log = logging.getLogger(__name__)

TRY_AGAIN = "The assistant could not answer just now; please try again in a minute."


class QuestionTask(app.Task):
    """A question's task: once it has given up, the person is told to try again."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        run = AgentRun.objects.get(pk=args[0] if args else kwargs["run_id"])
        job_mark_failed(run, TRY_AGAIN)


def ask_question(run_id: int) -> None:
    """Queue a question the web view has just stored; the person now waits for the answer."""
    # TODO: the promise counts from now. Does anything after this line know that?
    answer_question.apply_async(args=[run_id])


# Each attempt may take 45 s; fifteen more for the hard limit to clean up after one that ignores it.
# The provider's 429s and 503s pass: try again (Celery's defaults say how often and when).
@app.task(base=QuestionTask, bind=True, name="kontor.assistant.answer_question", soft_time_limit=45,
          time_limit=60, autoretry_for=(openai.RateLimitError, openai.InternalServerError))
def answer_question(self, run_id: int) -> None:
    """Ask the model the person's question and store its answer."""
    run = AgentRun.objects.get(pk=run_id)
    job_start(run, 1)
    # TODO: how long may all the attempts of this question take together, and when may the next one start?
    answer = ask(f"A customer asks: {run.goal}")
    AgentStep.objects.create(run=run, index=1, output=answer)
    job_item_done(run)
    job_mark_completed(run)
