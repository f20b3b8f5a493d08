"""Redis database leases on the stack's real Redis: concurrent checks and runs never share or empty each other's."""

import time

import pytest
import redis

from budgetlab.errors import BudgetlabError
from budgetlab.stack.leases import RedisLease


def _hold_all() -> list[RedisLease]:
    """Lease every free database; return the leases and leave the server with none free."""
    leases = []
    try:
        with pytest.raises(BudgetlabError, match=r"^all \d+ Redis databases are in use by other checks or runs"):
            for _ in range(256):
                leases.append(RedisLease(empty=False))
    except BaseException:
        for lease in leases:
            lease.release()
        raise
    return leases


def test_a_held_database_is_never_handed_out_or_emptied_while_others_come_and_go():
    """A run holds its broker while many short checks lease and release around it."""
    with RedisLease() as held:
        client = redis.Redis.from_url(held.url)
        client.set("queued", "a message of the run")
        # More than any rotation through the databases would need to come back to it.
        for _ in range(80):
            with RedisLease() as passing:
                assert passing.number != held.number
        assert client.get("queued") == b"a message of the run"
        client.close()


def test_leases_are_distinct_and_a_released_database_comes_back_empty():
    leases = _hold_all()
    try:
        assert leases and len({lease.number for lease in leases}) == len(leases)
        first = leases.pop(0)
        redis.Redis.from_url(first.url).set("left", "by the last holder")
        first.release()
        first.release()  # twice does no harm
        with RedisLease() as again:
            assert again.number == first.number
            assert redis.Redis.from_url(again.url).dbsize() == 0
    finally:
        for lease in leases:
            lease.release()


def test_an_expired_lease_frees_its_database_and_its_late_release_takes_nothing_from_the_next_holder():
    """A holder SIGKILLed before releasing: its database returns after the lease time, and stays with its new holder."""
    stale = RedisLease(seconds=1)
    control = redis.Redis.from_url(stale.url.rsplit("/", 1)[0] + "/0")
    key = f"budgetlab:lease:{stale.number}"
    deadline = time.monotonic() + 10
    while control.exists(key) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not control.exists(key), "the lease did not expire"
    leases = _hold_all()
    try:
        assert stale.number in {lease.number for lease in leases}
        holder = control.get(key)
        stale.release()
        assert control.get(key) == holder, "a late release deleted the new holder's lease"
    finally:
        for lease in leases:
            lease.release()
        control.close()
