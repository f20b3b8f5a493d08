"""Calls to the model service through Kontor's client, from a process on the lab clock, as a worker makes them.

    python model_probe.py '{"calls": 2, "prompt": "same", "client": {"timeout": 30, "max_retries": 0}}'

Prints one JSON object: each call's answer or the name of the openai
error it raised, and the production seconds all calls took.
"""

import json
import sys
import time

import openai

from kontor.llm import MODEL, model_client


def main(request: dict) -> dict:
    client = model_client(**request.get("client", {}))
    outcomes = []
    started = time.monotonic()
    for _ in range(request.get("calls", 1)):
        try:
            answer = client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": request.get("prompt", "Which category fits?")}])
            outcomes.append(answer.choices[0].message.content)
        except openai.APIError as exc:
            outcomes.append(type(exc).__name__)
    return {"outcomes": outcomes, "seconds": time.monotonic() - started}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
