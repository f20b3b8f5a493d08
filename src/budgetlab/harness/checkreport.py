"""The JSON-lines file through which a grading run tells `budgetlab check` what happens: starts, workers, results.

`budgetlab check` names the file in BUDGETLAB_REPORT_FILE; anywhere else
(the plain suite, `budgetlab run`) nothing is written.
"""

from __future__ import annotations

import json
import os

VARIABLE = "BUDGETLAB_REPORT_FILE"


def active() -> bool:
    return bool(os.environ.get(VARIABLE))


def write(entry: dict) -> None:
    """Append one entry, when a check is listening."""
    path = os.environ.get(VARIABLE)
    if path:
        # One write of the whole line, appended: a buffered file may hand a long line to the OS in pieces.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(entry) + "\n").encode())
        finally:
            os.close(fd)
