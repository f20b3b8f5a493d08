"""Stand-ins for the language model and the OCR service: they sleep for a call's latency, then answer.

Their latencies follow `kontor.latency` and are deterministic per item
key and seed. A scenario can pin latencies, or make an item's call fail,
with a plan file named by KONTOR_LATENCY_PLAN:

    {"seed": 7,
     "model": {"default": 5.5, "keys": {"row-341": 40.0}, "fail": ["row-12"]},
     "ocr":   {"default": 0.03}}

All latencies are production seconds.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time

from kontor.latency import MODEL_CALL, OCR_CALL, LatencyModel, keyed_rng


class ModelError(Exception):
    """The model service answered with an error for this one request."""


class OcrError(Exception):
    """The OCR service could not read this one file."""


@functools.lru_cache(maxsize=4)
def _plan(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def _section(kind: str) -> tuple[dict, int]:
    path = os.environ.get("KONTOR_LATENCY_PLAN")
    plan = _plan(path) if path else {}
    return plan.get(kind, {}), int(plan.get("seed", os.environ.get("KONTOR_LATENCY_SEED", 7)))


def latency(kind: str, key: str) -> float:
    """Return the production-seconds latency of one call of kind 'model' or 'ocr' for an item."""
    section, seed = _section(kind)
    pinned = section.get("keys", {}).get(key, section.get("default"))
    if pinned is not None:
        return float(pinned)
    model: LatencyModel = MODEL_CALL if kind == "model" else OCR_CALL
    return model.sample(keyed_rng(seed, f"{kind}:{key}"))


def _fails(kind: str, key: str) -> bool:
    section, _ = _section(kind)
    return key in section.get("fail", ())


def _log_call(kind: str, key: str) -> None:
    """Append one line per billed call to KONTOR_CALL_LOG, if set: the stand-in's bill, read by lab 7."""
    path = os.environ.get("KONTOR_CALL_LOG")
    if path:
        # One short write in append mode: lines from concurrent worker children never interleave.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{kind} {key} pid={os.getpid()}\n".encode())
        finally:
            os.close(fd)


def model_complete(prompt: str, *, key: str) -> str:
    """Ask the model; takes production seconds from the latency model, then answers.

    The answer names the category whose keywords overlap the prompt most,
    which is what Kontor's prompts ask for.
    """
    _log_call("model", key)
    time.sleep(latency("model", key))
    if _fails("model", key):
        raise ModelError(f"model service returned 502 for {key}")
    digest = hashlib.sha1(prompt.encode()).hexdigest()[:8]
    return f"answer {digest} for {key}"


def ocr_read(content: str, *, key: str) -> str:
    """Read a document's text, as the OCR service would, in tens of production milliseconds."""
    time.sleep(latency("ocr", key))
    if _fails("ocr", key):
        raise OcrError(f"OCR could not read {key}")
    return " ".join(content.split())
