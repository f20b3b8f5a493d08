"""Puts every Python process the workshop starts for a lab on the lab clock, before any other import.

The workshop adds this folder to the PYTHONPATH of its workers, its lab
commands and anything they start (a launch script's `celery` masters, the
pool's children), so the process reads and waits on production time at
the lab's speed (budgetlab.inworker.labtime). BUDGETLAB_CLOCK gives the
factor, BUDGETLAB_CLOCK_ANCHOR the shared wall instant; without them, or
with a factor of 1, nothing changes. A sitecustomize further down the
path, if the interpreter has one, still runs.
"""

import os
import sys


def _start() -> None:
    raw = os.environ.get("BUDGETLAB_CLOCK", "")
    if not raw:
        return
    try:
        factor = float(raw)
        anchor = float(os.environ["BUDGETLAB_CLOCK_ANCHOR"])
    except (KeyError, ValueError):
        sys.stderr.write(f"budgetlab: BUDGETLAB_CLOCK={raw!r} needs a number and BUDGETLAB_CLOCK_ANCHOR a wall "
                         "timestamp; this process runs on wall time\n")
        return
    if not 0 < factor <= 1:
        return
    from budgetlab.inworker import housekeeping, labtime, servertime, warmup

    labtime.install(factor, anchor)
    servertime.install()
    housekeeping.install()
    warmup.install()


def _chain() -> None:
    """Run the sitecustomize this one shadows, as the interpreter would have."""
    # importlib.util does not import importlib.machinery: without a clock to install, nothing else has.
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [entry for entry in sys.path if os.path.abspath(entry or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


_start()
_chain()
