"""The helper every batch job uses for its one model call per item.

A model call fails now and then (a 502, a timeout on the provider's side).
That is the item's problem, not the batch's, so this helper logs the error
and answers None, and the caller goes on without an answer for that item.

Goal: a job whose time runs out while this helper waits on the model
ends as the lab's goal says, just as it does anywhere else in its loop;
the checks make the soft limit fire in the middle of a model call. A
failed model call must still only cost its own item.
"""

import logging

from celery.exceptions import SoftTimeLimitExceeded
from kontor.clients import model_complete

log = logging.getLogger(__name__)


def ask_model(prompt: str, *, key: str) -> str | None:
    """Ask the model about one item; None when the call failed."""
    try:
        return model_complete(prompt, key=key)
    except SoftTimeLimitExceeded:
        # The task's time is up: not this call's failure, and not this helper's
        # to decide. Let it reach the loop, which ends the job.
        raise
    except Exception as exc:
        log.warning("model call for %s failed: %r", key, exc)
        return None
