"""Kontor's model client: the official openai client, pointed at the model service.

    from kontor.llm import model_client
    client = model_client(timeout=30, max_retries=1)
    client.chat.completions.create(model=MODEL, messages=[...])

Every keyword goes to `openai.OpenAI` unchanged, so a client made here has
the library's own defaults unless the caller chooses otherwise: a 600 s
read timeout (5 s to connect) and two retries.
KONTOR_MODEL_BASE_URL names the service (the workshop starts one per lab run).
"""

from __future__ import annotations

import os

import openai

# The model Kontor's prompts are written for; the workshop's stand-in answers to any name.
MODEL = "kontor-assistant-1"


def base_url() -> str:
    """Return the model service's OpenAI-compatible base URL, ending in /v1."""
    # Unset, a client can still be made (modules that make one at import still import);
    # its calls go to the discard port, where nothing listens, and fail at once.
    return os.environ.get("KONTOR_MODEL_BASE_URL") or "http://127.0.0.1:9/v1"


def model_client(**options) -> openai.OpenAI:
    """Return an openai client for Kontor's model service; options as for `openai.OpenAI`."""
    options.setdefault("api_key", os.environ.get("KONTOR_MODEL_API_KEY", "kontor-workshop"))
    client = openai.OpenAI(base_url=base_url(), **options)
    _warm_up(client)
    return client


def _warm_up(client: openai.OpenAI) -> None:
    """Load what openai loads lazily on a first call, so no person's question pays for it.

    The chat resources are imported on first use and the response model's
    validator is built on first parse: together tens of milliseconds, which
    the lab clock would turn into seconds of the first question's budget.
    """
    from openai.types.chat import ChatCompletion

    client.chat.completions  # noqa: B018 - the attribute access is the import

    ChatCompletion.model_validate({"id": "warm-up", "object": "chat.completion", "created": 0, "model": MODEL,
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": ""}}]})
