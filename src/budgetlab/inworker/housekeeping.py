"""Celery's and kombu's guards against a slow machine keep their wall seconds on the lab clock.

A few waits in the worker are not part of any budget: they bound how
long the machine itself may take (a new pool child to say it is up, a
Redis connection to answer) or how often the worker polls. In
production they are seconds against operations of milliseconds;
compressed with everything else they would be milliseconds against the
same milliseconds, and a busy laptop would see children killed at start
or connections dropped as stale. These keep the wall seconds they have
in production, expressed in the production seconds the process now reads:

- prefork's wait for a new child's first message (worker_proc_alive_timeout, 4 s);
- kombu's BRPOP poll (1 s) and its health checks (25 s), which also decide
  when a BRPOP that has not answered counts as a dead connection;
- psycopg's wait for a new PostgreSQL connection (connect_timeout, 130 s
  unless the connection string says otherwise).

Everything a lab teaches (time limits, visibility timeouts, the restore
sweep, retries, a task's own waits) stays on the lab clock.
"""

from __future__ import annotations

from budgetlab.inworker import afterimport, labtime


def install() -> None:
    clock = labtime.installed()
    if clock is None:
        return
    afterimport.patch("celery.concurrency.asynpool", lambda module: _asynpool(module, clock))
    afterimport.patch("kombu.transport.redis", lambda module: _kombu_redis(module, clock))
    afterimport.patch("psycopg.conninfo", lambda module: _psycopg_conninfo(module, clock))


def _asynpool(module, clock: labtime.Clock) -> None:
    init = module.AsynPool.__init__

    def __init__(self, *args, proc_alive_timeout=None, **kwargs):
        wall = module.PROC_ALIVE_TIMEOUT if proc_alive_timeout is None else proc_alive_timeout
        init(self, *args, proc_alive_timeout=clock.production(wall), **kwargs)

    module.AsynPool.__init__ = __init__


def _kombu_redis(module, clock: labtime.Clock) -> None:
    module.Transport.brpop_timeout = clock.production(module.Transport.brpop_timeout)
    module.Channel.health_check_interval = clock.production(module.Channel.health_check_interval)


def _psycopg_conninfo(module, clock: labtime.Clock) -> None:
    timeout_from_conninfo = module.timeout_from_conninfo

    def connect_timeout(params):
        return clock.production(timeout_from_conninfo(params))

    # psycopg.connection imports the function by name, after this module: it gets this one.
    module.timeout_from_conninfo = connect_timeout
