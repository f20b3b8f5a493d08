"""Redis databases leased to one check or run at a time, so that concurrent ones never empty each other's broker.

A database is leased only when it is empty or carries budgetlab's mark key,
which the lease writes; one that holds anybody else's keys is never emptied.
"""

from __future__ import annotations

import os
import uuid

from budgetlab.errors import StackShortage
from budgetlab.stack import secrets

# Database 0 holds the leases (and is Kontor's default broker); every other one can be leased.
_LEASE_KEY = "budgetlab:lease:{}"
_CURSOR_KEY = "budgetlab:lease-cursor"
# Longer than any check (its deadline is 180 s) or run; a holder that was SIGKILLed
# before it could release still frees its database after this long.
LEASE_SECONDS = 900
# Deletes the lease only while it is still this holder's: after an expiry, someone else's.
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
# The same, after emptying the leased database (run in the lease's database 0; a SELECT
# inside a script changes only the script's own database), so a run leaves behind no
# queue or result on a server it shares with others, only its mark.
_RELEASE_EMPTY = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('select', ARGV[2])
if redis.call('exists', ARGV[3]) == 1 then
  redis.call('flushdb')
  redis.call('set', ARGV[3], ARGV[4])
end
redis.call('select', ARGV[5])
return redis.call('del', KEYS[1])
"""
# Written into every database budgetlab leases; without it, a database that holds keys is someone else's.
MARK_KEY = "budgetlab:leased-database"
_MARK_VALUE = "leased by budgetlab for a check or run; budgetlab empties this database before reusing it"
# In one step, so nobody's key can arrive between the look and the flush: claim the selected
# database when it is empty or already marked, empty it if asked, and mark it.
_CLAIM = """
if redis.call('exists', KEYS[1]) == 0 and redis.call('dbsize') > 0 then return 0 end
if ARGV[2] == '1' then redis.call('flushdb') end
redis.call('set', KEYS[1], ARGV[1])
return 1
"""


class RedisLease:
    """One Redis database, emptied and held for its holder until release() or the end of a with block."""

    def __init__(self, empty: bool = True, seconds: int = LEASE_SECONDS):
        import redis

        from budgetlab import stack

        self._control_db = 0
        self._control = redis.Redis.from_url(stack.redis_url(self._control_db))
        self._token = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.number = self._acquire(seconds, empty)
        self.url = stack.redis_url(self.number)

    def _acquire(self, seconds: int, empty: bool) -> int:
        import redis

        from budgetlab import stack

        count = _database_count(self._control)
        # Start after the last lease handed out, so a database just released rests a while.
        start = self._control.incr(_CURSOR_KEY)
        foreign = 0
        for offset in range(count - 1):
            number = 1 + (start + offset) % (count - 1)
            key = _LEASE_KEY.format(number)
            if not self._control.set(key, self._token, nx=True, ex=seconds):
                continue
            with redis.Redis.from_url(stack.redis_url(number)) as client:
                if client.eval(_CLAIM, 1, MARK_KEY, _MARK_VALUE, "1" if empty else "0"):
                    return number
            foreign += 1
            self._control.eval(_RELEASE, 1, key, self._token)
        self._control.close()
        where = secrets.address(stack.redis_url(self._control_db))
        if foreign:
            raise StackShortage(
                f"no Redis database on {where} can be used: {foreign} of {count - 1} hold keys budgetlab did not "
                f"write and the others are leased by checks or runs; budgetlab uses only empty databases "
                f"or ones marked with the key {MARK_KEY}, so empty one or point REDIS_URL at another server")
        raise StackShortage(f"all {count - 1} Redis databases are in use by other checks or runs; "
                             "try again when they have finished")

    def release(self) -> None:
        """Give the database back; calling it twice, or after the lease expired, does no harm."""
        import redis

        if self._control is None:
            return
        try:
            self._control.eval(_RELEASE_EMPTY, 1, _LEASE_KEY.format(self.number), self._token, self.number,
                               MARK_KEY, _MARK_VALUE, self._control_db)
        except redis.RedisError:
            pass  # the lease expires on its own
        finally:
            self._control.close()
            self._control = None

    def __enter__(self) -> RedisLease:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def _database_count(control) -> int:
    """Return how many databases the server has; 16, Redis's default, when CONFIG is not allowed."""
    import redis

    try:
        return int(control.config_get("databases")["databases"])
    except (redis.RedisError, KeyError, ValueError):
        return 16
