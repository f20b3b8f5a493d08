"""Work every prefork child would repeat, done once in its master before the pool forks.

Each child Celery's prefork pool starts sets its parent-death signal
(celery/concurrency/prefork.py:48 in Celery 5.6.3), and billiard does that
through cffi whenever cffi is installed (set_pdeathsig, billiard/util.py
lines 213-218 in billiard 4.3.2; the notebooks' argon2 bindings install
cffi): a new cffi parser per child, 23-28 ms of CPU before the child takes
a task. The master reads its own setting once the same way (get_pdeathsig,
lines 185-191), which changes nothing, and every child it forks inherits
the parsed declaration: measured here, 2.3 ms a child instead of 27.6. A
lab 8 check forks twelve children, a run of `make test` some thousands.
Only processes that import the prefork pool pay the one read.
"""

from __future__ import annotations

from budgetlab.inworker import afterimport


def install() -> None:
    afterimport.patch("celery.concurrency.prefork", _read_pdeathsig)


def _read_pdeathsig(module) -> None:
    from billiard import util

    try:
        util.get_pdeathsig()
    except OSError:  # not Linux: billiard sets no such signal, and neither do its children
        pass
