"""The one place the agents talk to the model: a client, and a helper that asks one question.

The client is the official openai client, made by Kontor's factory
(kontor.llm.model_client), which takes the same keywords as openai.OpenAI.
Write durations in production seconds: the factory runs the client's
waits on the lab clock.

Every option you do not pass is the library's default. Somebody chose
those numbers, for every program in the world that uses the library; not
for a person waiting on Kontor's assistant.

Goal: no model call, and no run of model calls, can wait longer than the
run it belongs to may take (see assistant.py and review.py).
"""

import contextlib
import contextvars
import logging
import time

from kontor import timescale
from kontor.llm import MODEL, model_client

log = logging.getLogger(__name__)

# No retries: the run's deadline, not the library, decides whether there is time for another try.
# The per-call timeout is whatever the run has left (see within).
client = model_client(max_retries=0)

_ends_at: contextvars.ContextVar[float | None] = contextvars.ContextVar("ends_at", default=None)


class BudgetSpent(Exception):
    """The run this call belongs to has no time left."""


@contextlib.contextmanager
def within(seconds: float):
    """Give every ask() in the block one shared budget of production seconds."""
    token = _ends_at.set(time.monotonic() + timescale.to_wall(seconds))
    try:
        yield
    finally:
        _ends_at.reset(token)


def ask(prompt: str) -> str:
    """Ask the model one question within the run's budget; an openai.APIError when the call fails or times out."""
    ends_at = _ends_at.get()
    left = 600.0 if ends_at is None else timescale.to_production(ends_at - time.monotonic())
    if left <= 1:
        raise BudgetSpent("no time left for another model call")
    response = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}],
                                              timeout=left)
    return response.choices[0].message.content
