"""Redis databases leased to one check or run at a time, so that concurrent ones never empty each other's broker.

A database is leased only when budgetlab can show that every key in it is
its own: it is empty, it holds nothing but budgetlab's mark, or it holds the
mark and the holder key of a lease that has ended without being released (a
check SIGKILLed while it held the database). Everything else is left alone.

Why that proves ownership: a lease writes the mark and a holder key carrying
its token into the database, in the same step as it checks the database and
takes the lease record in database 0. Everything the holder's workers write
(queues, results, lab code's own keys) arrives while that lease is held. A
release empties the database and leaves the mark alone in it, so a database
that holds the mark and any key but no holder key has had that key written
after budgetlab's last release: someone else's. A holder key beside the mark
whose lease record in database 0 has gone (it expired) names a holder
that can no longer release: what is there is that holder's.
The one key this cannot tell apart is one somebody writes into such a
database after its lease expired and before the next lease empties it; the
holder key says whose the database is, and the page on own servers says so.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

from budgetlab.errors import StackShortage
from budgetlab.stack import secrets

# Database 0 holds the leases (and is Kontor's default broker); every other one can be leased.
_LEASE_KEY = "budgetlab:lease:{}"
_CURSOR_KEY = "budgetlab:lease-cursor"
# Longer than any check (its deadline is 180 s) or run; a holder that was SIGKILLed
# before it could release still frees its database after this long.
LEASE_SECONDS = 900
# Written into every database budgetlab leases, and left alone in it by every release.
MARK_KEY = "budgetlab:leased-database"
_MARK_VALUE = ("budgetlab leases this database to its checks and runs while it holds nothing but this key "
               "(and their holder's key); beside any other key, budgetlab leaves it alone")
# Written beside the mark by each lease, with the lease's token; emptied with the rest by its release.
HOLDER_KEY = "budgetlab:lease-holder"

# What the claim found in a database (the script's reply).
_HELD, _FREE, _LEFTOVERS, _FOREIGN, _MARKED_FOREIGN = 0, 1, 2, -1, -2
# One step, run in database 0 (a SELECT inside a script changes only the script's own
# database), so neither another lease nor anybody's key can arrive between the look and the
# flush: take the lease record if nobody holds it, then claim the database when every key
# in it is budgetlab's (see the module's docstring), emptying a dead holder's leftovers, and
# write the mark and this lease's holder key; give the record back when the database is
# someone else's.
_CLAIM = f"""
if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return {_HELD} end
redis.call('select', ARGV[3])
local size = redis.call('dbsize')
local marked = redis.call('exists', ARGV[4]) == 1
local found = {_FOREIGN}
if size == 0 or (marked and size == 1) then
  found = {_FREE}
elseif marked and redis.call('exists', ARGV[6]) == 1 then
  found = {_LEFTOVERS}
  redis.call('flushdb')
elseif marked then
  found = {_MARKED_FOREIGN}
end
if found > 0 then
  redis.call('set', ARGV[4], ARGV[5])
  redis.call('set', ARGV[6], ARGV[1])
end
redis.call('select', ARGV[7])
if found < 0 then redis.call('del', KEYS[1]) end
return found
"""
# Deletes the lease only while it is still this holder's: after an expiry, someone else's.
# Before that it empties the database, only while it still holds this lease's holder key,
# so a run leaves behind no queue or result on a server it shares with others, only its mark.
_RELEASE = """
if redis.call('get', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('select', ARGV[2])
if redis.call('get', ARGV[3]) == ARGV[1] then
  redis.call('flushdb')
  redis.call('set', ARGV[4], ARGV[5])
end
redis.call('select', ARGV[6])
return redis.call('del', KEYS[1])
"""


class RedisLease:
    """One Redis database, emptied and held for its holder until release() or the end of a with block."""

    def __init__(self, seconds: int = LEASE_SECONDS):
        import redis

        from budgetlab import stack

        self._control_db = 0
        self._control = redis.Redis.from_url(stack.redis_url(self._control_db))
        self.token = f"{os.getpid()}-{uuid.uuid4().hex}"
        self.number = self._acquire(seconds)
        self.url = stack.redis_url(self.number)

    def _acquire(self, seconds: int) -> int:
        from budgetlab import stack

        count = _database_count(self._control)
        # Start after the last lease handed out, so a database just released rests a while.
        start = self._control.incr(_CURSOR_KEY)
        held, foreign, marked = 0, 0, []
        for offset in range(count - 1):
            number = 1 + (start + offset) % (count - 1)
            found = self._control.eval(_CLAIM, 1, _LEASE_KEY.format(number), self.token, seconds, number,
                                       MARK_KEY, _MARK_VALUE, HOLDER_KEY, self._control_db)
            if found in (_FREE, _LEFTOVERS):
                return number
            if found == _HELD:
                held += 1
            elif found == _FOREIGN:
                foreign += 1
            elif found == _MARKED_FOREIGN:
                marked.append(number)
        self._control.close()
        server = stack.require()["redis"]
        raise StackShortage(shortage(server.url, server.external, count - 1, held, foreign, sorted(marked)))

    def release(self) -> None:
        """Give the database back; calling it twice, or after the lease expired, does no harm."""
        import redis

        if self._control is None:
            return
        try:
            self._control.eval(_RELEASE, 1, _LEASE_KEY.format(self.number), self.token, self.number,
                               HOLDER_KEY, MARK_KEY, _MARK_VALUE, self._control_db)
        except redis.RedisError:
            pass  # the lease expires on its own
        finally:
            self._control.close()
            self._control = None

    def __enter__(self) -> RedisLease:
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def shortage(server_url: str, external: bool, leasable: int, held: int, foreign: int, marked: list[int]) -> str:
    """Say in one line why no database of the server could be leased, naming the marked ones left alone.

    `held` databases were leased by others, `foreign` held keys without the
    mark, `marked` (their numbers) the mark beside keys no lease accounts for.
    """
    if not foreign and not marked:
        return f"all {leasable} Redis databases are in use by other checks or runs; try again when they have finished"
    said = (f"no Redis database on {secrets.address(server_url)} can be used: {foreign + len(marked)} of "
            f"{leasable} hold keys budgetlab cannot show it wrote"
            + ("" if not held else " and the other one is in use by a check or run" if held == 1
               else f" and the other {held} are in use by checks or runs")
            + f" (it leases only databases that are empty or hold nothing but its key {MARK_KEY})")
    if not marked:
        return said + "; point REDIS_URL at a server with such databases"
    said += (f"; it left {_numbers(marked)} alone: {'each carries' if len(marked) > 1 else 'it carries'} that key "
             "beside keys no lease of budgetlab's accounts for (someone else's, or what an older budgetlab "
             "left behind)")
    if not external:
        return said + "; restart the stack ('budgetlab stack down', then 'budgetlab stack up'), which empties them"
    parts = urlsplit(secrets.without_password(server_url))
    url = urlunsplit(parts._replace(path=f"/{marked[0]}"))
    ask = " --askpass" if urlsplit(server_url).password else ""
    return (said + f"; look with 'redis-cli -u {url}{ask} --scan' and, if nothing there is anybody's, "
            f"empty it with 'redis-cli -u {url}{ask} FLUSHDB'"
            + (f" (the same for {_numbers(marked[1:])})" if len(marked) > 1 else ""))


def _numbers(numbers: list[int]) -> str:
    """'database 7', 'databases 7 and 9', 'databases 4, 7 and 9'."""
    if len(numbers) == 1:
        return f"database {numbers[0]}"
    return f"databases {', '.join(map(str, numbers[:-1]))} and {numbers[-1]}"


def _database_count(control) -> int:
    """Return how many databases the server has; 16, Redis's default, when CONFIG is not allowed."""
    import redis

    try:
        return int(control.config_get("databases")["databases"])
    except (redis.RedisError, KeyError, ValueError):
        return 16
