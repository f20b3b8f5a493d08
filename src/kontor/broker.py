"""Kontor's Celery app class: the Redis transport's timers run on the lab clock, the settings keep production seconds.

Kombu's Redis transport takes an unacknowledged message back once it is
older than `visibility_timeout` (3600 s unless set). It looks for such
messages from the worker's event loop, on a timer of its own
(`unacked_restore_interval`, 10 s) and, with `unacked_restore_throttle`
(10), really scans Redis only on every tenth tick, so in production a
redelivery comes between one hour and about 100 s later. The lab clock
compresses both: the settings still say 3600, the connection a worker
opens gets 3600 x factor, and the sweep scans on production's rhythm
(every 100 s) compressed the same way.
Kombu's own code does the restoring; only the numbers it is given change.
"""

from __future__ import annotations

from celery import Celery

from kontor import timescale

# Kombu's defaults, in production seconds, for transports whose settings leave them out.
VISIBILITY_TIMEOUT = 3600
RESTORE_INTERVAL = 10
RESTORE_THROTTLE = 10
MUTEX_EXPIRE = 300
# One tick per real scan, as often as production scans: every interval x throttle (100
# production seconds by default). Each scan costs the worker a Redis lock and a range query;
# scanning every 10 production seconds instead cost ten idle Celery masters half of one of
# two cores. The floor keeps a very fast clock cheap.
FASTEST_TICK = 0.02


def lab_clock_transport_options(options: dict) -> dict:
    """Return Redis transport options with their durations converted to wall seconds by the lab clock."""
    if timescale.factor() == 1:
        return dict(options)
    scaled = dict(options)
    scaled["visibility_timeout"] = timescale.to_wall(options.get("visibility_timeout", VISIBILITY_TIMEOUT))
    # Kombu reads a throttle of 0 as 1: scan on every tick.
    scan_every = (options.get("unacked_restore_interval", RESTORE_INTERVAL)
                  * (options.get("unacked_restore_throttle", RESTORE_THROTTLE) or 1))
    scaled["unacked_restore_interval"] = max(timescale.to_wall(scan_every), FASTEST_TICK)
    scaled["unacked_restore_throttle"] = 1
    # A sweep holds a Redis lock while it restores; a worker killed while holding it would
    # stop every other worker's sweep for five production minutes, not five wall minutes.
    scaled["unacked_mutex_expire"] = max(timescale.to_wall(options.get("unacked_mutex_expire", MUTEX_EXPIRE)), 0.1)
    return scaled


class KontorCelery(Celery):
    """Celery whose broker connections get their transport durations on the lab clock.

    `app.conf.broker_transport_options` stays as the settings wrote it,
    so anything that reads the configuration (a start-up check, the
    audit) sees production seconds.
    """

    def _connection(self, url, *args, **kwargs):
        connection = super()._connection(url, *args, **kwargs)
        if connection.transport_cls in ("redis", "rediss") or str(url).startswith(("redis", "rediss")):
            connection.transport_options = lab_clock_transport_options(connection.transport_options)
        return connection
