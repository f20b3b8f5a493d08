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

A worker master need not import the REPL of `celery amqp`: the CLI module
imports every subcommand, and `celery.bin.amqp` registers its REPL with
click_repl, which imports prompt_toolkit (0.12 s of a master's 0.5 s of
CLI imports here; a lab 1 check starts ten masters). In a process started
as `celery ... worker` a stand-in registers the same `repl` subcommand and
imports the real click_repl only if that subcommand ever runs.
"""

from __future__ import annotations

import gc
import importlib
import sys
import types

from budgetlab.inworker import afterimport


def install() -> None:
    afterimport.patch("celery.concurrency.prefork", _read_pdeathsig)
    afterimport.patch("celery.concurrency.asynpool", _freeze_before_forks)
    if "worker" in sys.argv[1:] and "click_repl" not in sys.modules:
        sys.modules["click_repl"] = _ReplStandIn("click_repl")


class _ReplStandIn(types.ModuleType):
    """click_repl for a worker master: `register_repl` as the real one, the package itself only on first use."""

    @staticmethod
    def register_repl(group, name: str = "repl") -> None:
        import click

        def repl(ctx, *args, **kwargs):
            return _real_click_repl().repl(ctx, *args, **kwargs)

        group.command(name=name)(click.pass_context(repl))

    def __getattr__(self, name: str):
        if name.startswith("__"):  # the import system's own questions (a package's __path__) need no REPL
            raise AttributeError(name)
        return getattr(_real_click_repl(), name)


def _real_click_repl():
    if isinstance(sys.modules.get("click_repl"), _ReplStandIn):
        del sys.modules["click_repl"]
    return importlib.import_module("click_repl")


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
