"""Redis database leases on the stack's real Redis: concurrent checks and runs never share or empty each other's."""

import time

import pytest
import redis

from budgetlab.errors import BudgetlabError
from budgetlab.stack.leases import MARK_KEY, RedisLease

# Leases on the running stack's Redis: not for `make test-quick`.
pytestmark = pytest.mark.stack


def _hold_all() -> list[RedisLease]:
    """Lease every free database; return the leases and leave the server with none free."""
    leases = []
    try:
        # Databases holding others' keys (the suite's canaries among them) are never leased either.
        with pytest.raises(BudgetlabError, match=r"^(all \d+ Redis databases are in use by other checks or runs"
                                                 r"|no Redis database on \S+ can be used)"):
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


@pytest.mark.alone
def test_leases_are_distinct_and_a_released_database_comes_back_empty():
    """Two holders never share a database; the next holder finds only budgetlab's mark in it."""
    leases = _hold_all()
    try:
        assert leases and len({lease.number for lease in leases}) == len(leases)
        first = leases.pop(0)
        redis.Redis.from_url(first.url).set("left", "by the last holder")
        first.release()
        assert redis.Redis.from_url(first.url).keys() == [MARK_KEY.encode()], "a release left its keys behind"
        first.release()  # twice does no harm
        with RedisLease() as again:
            assert again.number == first.number
            assert redis.Redis.from_url(again.url).keys() == [MARK_KEY.encode()]
    finally:
        for lease in leases:
            lease.release()


@pytest.mark.alone
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
        queued = redis.Redis.from_url(stale.url)
        queued.set("queued", "the new holder's message")
        stale.release()
        assert control.get(key) == holder, "a late release deleted the new holder's lease"
        assert queued.get("queued") == b"the new holder's message", "a late release emptied the new holder's database"
        queued.close()
    finally:
        for lease in leases:
            lease.release()
        control.close()


CANARY = "someone-elses-key"


def _plant_in_even_databases() -> dict[int, redis.Redis]:
    """Give every even-numbered database that nobody holds a key budgetlab did not write; return their clients."""
    from budgetlab import stack

    control = redis.Redis.from_url(stack.redis_url(0))
    count = int(control.config_get("databases")["databases"])
    planted = {}
    for number in range(2, count, 2):
        if control.exists(f"budgetlab:lease:{number}"):
            continue
        client = redis.Redis.from_url(stack.redis_url(number))
        client.delete(MARK_KEY)
        if client.dbsize() == 0:
            client.set(CANARY, "kept")
            planted[number] = client
    control.close()
    return planted


@pytest.mark.alone
def test_a_database_holding_someone_elses_keys_is_never_leased_or_emptied():
    """Databases holding keys budgetlab did not write are skipped by every lease, and their keys survive."""
    planted = _plant_in_even_databases()
    assert planted, "no free even-numbered database to plant a key in"
    leases = []
    try:
        for _ in range(40):
            with RedisLease() as passing:
                assert passing.number not in planted
        with pytest.raises(BudgetlabError, match=r"^no Redis database on \S+ can be used: \d+ of \d+ hold keys "
                                                 r"budgetlab did not write .* point REDIS_URL at another server$"):
            for _ in range(256):
                leases.append(RedisLease())
        assert all(lease.number not in planted for lease in leases)
        for number, client in planted.items():
            assert client.get(CANARY) == b"kept", f"database {number} lost a key budgetlab did not write"
            assert not client.exists(MARK_KEY), f"database {number} was marked as budgetlab's"
    finally:
        for lease in leases:
            lease.release()
        for client in planted.values():
            client.delete(CANARY)
            client.close()
