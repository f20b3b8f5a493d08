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

from kontor.llm import MODEL, model_client

log = logging.getLogger(__name__)

# TODO: how long may one call take, and how often is it tried? Nothing here says.
client = model_client()


def ask(prompt: str) -> str:
    """Ask the model one question and return its answer; an openai.APIError when the call fails."""
    response = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}])
    return response.choices[0].message.content
