"""The one place the agents talk to the model: a client, and a helper that asks one question.

The client is the official openai client, made by Kontor's factory
(kontor.llm.model_client), which takes the same keywords as openai.OpenAI.

Every option you do not pass is the library's default. Somebody chose
those numbers, for every program in the world that uses the library; not
for a person waiting on Kontor's assistant.

Goal: no model call, and no run of model calls, can wait longer than the
run it belongs to may take (see assistant.py and review.py).
"""

import logging
import time

from kontor.llm import MODEL, model_client

log = logging.getLogger(__name__)

# One call may take 30 s: a healthy call is 5.5 s at the median and 35 s at the
# 99th percentile, so this cuts about one healthy call in 70 and every hung one.
# No retries by the client: a retry doubles what the caller waits, and only the
# caller knows whether it has time for another try (see Deadline).
PER_CALL = 30.0
client = model_client(timeout=PER_CALL, max_retries=0)

# Below this, a call cannot succeed at a healthy pace: do not start it.
SHORTEST_CALL = 2.0


class OutOfTime(Exception):
    """The run's budget is spent: the caller ends the run, it does not skip a step."""


class Deadline:
    """The seconds one run may still spend, shared by all its calls."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self._ends = time.monotonic() + seconds

    def left(self) -> float:
        return self._ends - time.monotonic()


def ask(prompt: str, deadline: Deadline) -> str:
    """Ask the model one question within what is left of the run's deadline.

    An openai.APIError when the call fails or times out; OutOfTime when the
    deadline leaves no time for a call.
    """
    left = deadline.left()
    if left < SHORTEST_CALL:
        raise OutOfTime(f"{deadline.seconds:g} s budget spent")
    response = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}],
                                              timeout=min(PER_CALL, left))
    return response.choices[0].message.content
