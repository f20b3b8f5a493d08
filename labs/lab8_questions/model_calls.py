"""The one place the assistant and the review talk to the model: a client, and a helper that asks once.

The client tries every call once and waits at most 20 s for it: retrying
is the tasks' business, so that a retry is a decision a reviewer can see
in the task that makes it (assistant.py, review.py).
"""

from kontor.llm import MODEL, model_client

# One try per call, 20 s at most: the tasks decide whether and when to try again.
client = model_client(timeout=20, max_retries=0)


def ask(prompt: str) -> str:
    """Ask the model one question and return its answer.

    Raises openai.RateLimitError on a 429 (its `.response.headers` carry the
    provider's Retry-After), openai.InternalServerError on a 5xx, and
    another openai.APIError when the call fails otherwise.
    """
    response = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": prompt}])
    return response.choices[0].message.content
