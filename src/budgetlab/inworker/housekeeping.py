"""The client libraries' guards against a slow machine keep their wall seconds on the lab clock.

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
  unless the connection string says otherwise);
- redis-py's time-outs for a connection and for each reply, in its blocking
  and its asyncio client (5 s each by default, redis/_defaults.py:7 in
  8.2.0; Celery's Redis result backend sets 120 s). Compressed, a default
  blocking client gave up on a reply after the socket floor's 0.1 wall
  seconds and an asyncio one after a few milliseconds, which a loaded
  machine exceeds (a rehearsal's clock probe failed with
  redis.exceptions.TimeoutError); lab 7's Redis leases use such a client.

Everything a lab teaches (time limits, visibility timeouts, the restore
sweep, retries, a task's own waits) stays on the lab clock.
"""

from __future__ import annotations

import functools
import inspect

from budgetlab.inworker import afterimport, labtime


def install() -> None:
    clock = labtime.installed()
    if clock is None:
        return
    afterimport.patch("celery.concurrency.asynpool", lambda module: _asynpool(module, clock))
    afterimport.patch("kombu.transport.redis", lambda module: _kombu_redis(module, clock))
    afterimport.patch("psycopg.conninfo", lambda module: _psycopg_conninfo(module, clock))
    afterimport.patch("redis.connection", lambda module: _redis_connection(module, clock))
    afterimport.patch("redis.asyncio.connection", lambda module: _redis_connection(module, clock))


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


# The time-outs a redis-py connection takes (keyword arguments: its pool passes them so).
_REDIS_TIMEOUTS = ("socket_timeout", "socket_connect_timeout")


def _redis_connection(module, clock: labtime.Clock) -> None:
    cls = module.AbstractConnection
    init = cls.__init__
    parameters = inspect.signature(init).parameters

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        for name in _REDIS_TIMEOUTS:
            value = kwargs.get(name, parameters[name].default if name in parameters else None)
            if isinstance(value, (int, float)) and value > 0:
                kwargs[name] = clock.production(value)
        init(self, *args, **kwargs)

    cls.__init__ = __init__
