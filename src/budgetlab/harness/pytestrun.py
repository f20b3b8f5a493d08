"""`python -m budgetlab.harness.pytestrun ARGS`: pytest as `budgetlab check` runs graders, without the teardown.

Once pytest returns, every fixture's finalizer and every cleanup of its
session has run: the workers, databases and Redis leases a check made
are gone, and its report is written. What is left is the interpreter
taking apart the thousand modules a grader imports (Django, Celery,
psycopg), which took 0.18 s of every check here (lab 4, measured from
its last exit function to the process's end). The exit functions still
run and the streams are flushed; then the process ends with pytest's
exit status.
"""

from __future__ import annotations

import atexit
import os
import sys

import pytest


def main() -> None:
    code = int(pytest.main(sys.argv[1:]))
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


if __name__ == "__main__":
    main()
