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

The master also collects its garbage before it forks each child
(`gc.collect()  # Issue #2927`, celery/concurrency/asynpool.py:492 in
Celery 5.6.3): a full pass over every object Django, the lab's code and
its clients created, about 90 ms of the master's CPU a child (a lab 8
master: 12 passes, 1.2 s, before its "ready" line). Before the first fork
the master collects once and freezes what survives (`gc.freeze`, Python's
own advice for servers that fork): the passes before the other forks, and
the children's own collections, then skip those objects, which a child
never frees anyway. The garbage is still collected before each fork, as
Celery's issue asks: only what lives on is frozen.
"""

from __future__ import annotations

import gc

from budgetlab.inworker import afterimport


def install() -> None:
    afterimport.patch("celery.concurrency.prefork", _read_pdeathsig)
    afterimport.patch("celery.concurrency.asynpool", _freeze_before_forks)


def _freeze_before_forks(module) -> None:
    from celery.signals import worker_before_create_process

    # weak=False: the signal keeps its receivers by weak reference, and this one is defined here only.
    worker_before_create_process.connect(_collect_and_freeze, weak=False)


def _collect_and_freeze(sender=None, **kwargs) -> None:
    gc.collect()
    gc.freeze()


def _read_pdeathsig(module) -> None:
    from billiard import util

    try:
        util.get_pdeathsig()
    except OSError:  # not Linux: billiard sets no such signal, and neither do its children
        pass
