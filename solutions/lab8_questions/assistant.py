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
from random import uniform
import time

import openai
from kontor.books.models import AgentRun, AgentStep
from kontor.books.services import job_item_done, job_mark_completed, job_mark_failed, job_start
from kontor.celery_app import app

from lab8_questions.model_calls import ask, client

log = logging.getLogger(__name__)

TRY_AGAIN = "The assistant could not answer just now; please try again in a minute."

# The product promise, from the moment the person asks, whatever the number of attempts.
PROMISE = 60.0
# An attempt may wait for its call as long as the client does (model_calls.py): none starts with less left.
LAST_START = float(client.timeout)
# After a 503 the provider names no wait; a few seconds lets it catch its breath.
SERVER_ERROR_WAIT = 5.0
# Each retry waits its shortest wait plus a random share of this, so refused calls come back apart.
SPREAD = 20.0


class QuestionTask(app.Task):
    """A question's task: once it has given up, the person is told to try again."""

    def on_failure(self, exc, task_id, args, kwargs, einfo) -> None:
        run = AgentRun.objects.get(pk=args[0] if args else kwargs["run_id"])
        job_mark_failed(run, TRY_AGAIN)


def ask_question(run_id: int) -> None:
    """Queue a question the web view has just stored; the person now waits for the answer."""
    # The promise counts from now: its deadline travels in the message, to every retry of it
    # (a retry re-sends the same arguments).
    answer_question.apply_async(args=[run_id, time.time() + PROMISE])


def retry_after(exc: openai.APIStatusError) -> float:
    """Return the seconds the provider's Retry-After header asks for (0 when it names none)."""
    try:
        return max(float(exc.response.headers.get("retry-after", 0)), 0.0)
    except ValueError:  # an HTTP date: never sent by this provider; wait the shortest time instead
        return 0.0


def retry_delay(exc: openai.APIStatusError) -> float:
    """Return how long to wait before the next attempt: what the provider asks, at least, spread at random."""
    return max(SERVER_ERROR_WAIT, retry_after(exc)) + uniform(0, SPREAD)


# Each attempt may take 45 s; fifteen more for the hard limit to clean up after one that ignores it.
# No count of retries: the deadline bounds them.
@app.task(base=QuestionTask, bind=True, name="kontor.assistant.answer_question", soft_time_limit=45,
          time_limit=60, max_retries=None)
def answer_question(self, run_id: int, deadline: float) -> None:
    """Ask the model the person's question and store its answer, or say "try again" once the promise is spent."""
    run = AgentRun.objects.get(pk=run_id)
    if time.time() > deadline - LAST_START:
        job_mark_failed(run, TRY_AGAIN)
        return
    job_start(run, 1)
    try:
        answer = ask(f"A customer asks: {run.goal}")
    except (openai.RateLimitError, openai.InternalServerError) as exc:
        delay = retry_delay(exc)
        if time.time() + delay > deadline - LAST_START:
            # The next attempt would start too late to keep the promise: say so now, not later.
            log.warning("question %d: the provider refused (%r); no time left to try again", run.pk, exc)
            job_mark_failed(run, TRY_AGAIN)
            return
        raise self.retry(exc=exc, countdown=delay)
    AgentStep.objects.create(run=run, index=1, output=answer)
    job_item_done(run)
    job_mark_completed(run)
