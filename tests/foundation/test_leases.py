"""Redis database leases on the stack's real Redis: concurrent checks and runs never share or empty each other's."""

import os
import subprocess
import sys
import time

import pytest
import redis

from budgetlab import stack
from budgetlab.errors import BudgetlabError
from budgetlab.stack.leases import HOLDER_KEY, MARK_KEY, RedisLease

# Leases on the running stack's Redis: not for `make test-quick`.
pytestmark = pytest.mark.stack

SHORTAGE = r"^(all \d+ Redis databases are in use by other checks or runs|no Redis database on \S+ can be used)"


def _hold_all() -> list[RedisLease]:
    """Lease every free database; return the leases and leave the server with none free."""
    leases = []
    try:
        # Databases holding others' keys (the suite's canaries among them) are never leased either.
        with pytest.raises(BudgetlabError, match=SHORTAGE):
            for _ in range(256):
                leases.append(RedisLease())
    except BaseException:
        for lease in leases:
            lease.release()
        raise
    return leases


def _control() -> redis.Redis:
    return redis.Redis.from_url(stack.redis_url(0))


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
    """Two holders never share a database; the next holder finds only budgetlab's mark and its own holder key."""
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
            client = redis.Redis.from_url(again.url)
            assert sorted(client.keys()) == sorted([MARK_KEY.encode(), HOLDER_KEY.encode()])
            assert client.get(HOLDER_KEY) == again.token.encode(), "the holder key names another lease"
            client.close()
    finally:
        for lease in leases:
            lease.release()


def _wait_until_expired(lease: RedisLease, control: redis.Redis) -> None:
    key = f"budgetlab:lease:{lease.number}"
    deadline = time.monotonic() + 10
    while control.exists(key) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not control.exists(key), "the lease did not expire"


@pytest.mark.alone
def test_an_expired_lease_frees_its_database_and_its_late_release_takes_nothing_from_the_next_holder():
    """A holder SIGKILLed before releasing: its leftovers are emptied by the next lease, which keeps the database."""
    stale = RedisLease(seconds=1)
    left = redis.Redis.from_url(stale.url)
    left.set("celery", "a queue the dead holder's workers left")
    left.close()
    control = _control()
    key = f"budgetlab:lease:{stale.number}"
    _wait_until_expired(stale, control)
    leases = _hold_all()
    try:
        taken = {lease.number: lease for lease in leases}
        assert stale.number in taken, "a dead holder's leftovers kept its database from being leased again"
        queued = redis.Redis.from_url(stale.url)
        assert sorted(queued.keys()) == sorted([MARK_KEY.encode(), HOLDER_KEY.encode()]), \
            "the next lease did not empty a dead holder's leftovers"
        holder = control.get(key)
        assert holder == taken[stale.number].token.encode() == queued.get(HOLDER_KEY)
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


def _free_databases(control: redis.Redis) -> list[int]:
    count = int(control.config_get("databases")["databases"])
    return [number for number in range(1, count) if not control.exists(f"budgetlab:lease:{number}")]


def _left_alone(said: str) -> set[int]:
    """The database numbers a shortage message says it left alone, each checked to hold the mark beside others' keys.

    The suite's own canaries (tests/conftest.py) may be named beside a test's.
    """
    assert " alone: " in said, said
    named = {int(word) for word in said.split(" alone: ")[0].split(" it left ")[-1].replace(",", " ").split()
             if word.isdigit()}
    for number in named:
        with redis.Redis.from_url(stack.redis_url(number)) as client:
            keys = set(client.keys())
        assert MARK_KEY.encode() in keys and HOLDER_KEY.encode() not in keys and len(keys) > 1, \
            f"the shortage named database {number}, which holds {sorted(keys)}"
    return named


@pytest.mark.alone
def test_a_database_holding_someone_elses_keys_is_never_leased_or_emptied(redis_planter):
    """Databases holding keys budgetlab did not write are skipped by every lease, and their keys survive."""
    control = _control()
    planted = redis_planter(_free_databases(control)[1::2], CANARY, marked=False)
    control.close()
    assert planted, "no free empty database to plant a key in"
    leases = []
    try:
        for _ in range(40):
            with RedisLease() as passing:
                assert passing.number not in planted
        with pytest.raises(BudgetlabError, match=r"^no Redis database on \S+ can be used: \d+ of \d+ hold keys "
                                                 r"budgetlab cannot show it wrote") as shortage:
            for _ in range(256):
                leases.append(RedisLease())
        said = str(shortage.value)
        # Without the mark, a database is a person's: the shortage never offers to empty it.
        assert not set(planted) & (_left_alone(said) if " alone: " in said else set()), said
        assert all(lease.number not in planted for lease in leases)
        for number, client in planted.items():
            assert client.get(CANARY) == b"kept", f"database {number} lost a key budgetlab did not write"
            assert not client.exists(MARK_KEY), f"database {number} was marked as budgetlab's"
    finally:
        for lease in leases:
            lease.release()


@pytest.mark.alone
def test_a_marked_database_holding_someone_elses_key_is_left_alone_and_named(redis_planter):
    """A key written beside budgetlab's mark after its last release is kept, the lease goes elsewhere, and the shortage names the database."""
    control = _control()
    planted = redis_planter(_free_databases(control)[::3], CANARY, marked=True)
    control.close()
    assert planted, "no free database holding only budgetlab's mark, or nothing, to plant a key in"
    leases = []
    try:
        for _ in range(40):
            with RedisLease() as passing:
                assert passing.number not in planted, f"database {passing.number} was leased beside {CANARY}"
        with pytest.raises(BudgetlabError) as shortage:
            for _ in range(256):
                leases.append(RedisLease())
        said = str(shortage.value)
        assert "\n" not in said and said.startswith("no Redis database on "), said
        assert set(planted) <= _left_alone(said), said
        assert all(lease.number not in planted for lease in leases)
        for number, client in planted.items():
            assert client.get(CANARY) == b"kept", f"database {number} lost a key written beside budgetlab's mark"
            assert client.exists(MARK_KEY) and not client.exists(HOLDER_KEY), f"database {number} was leased"
    finally:
        for lease in leases:
            lease.release()


@pytest.mark.alone
def test_a_check_that_finds_only_marked_databases_with_others_keys_says_which_it_left_alone(redis_planter):
    """`budgetlab check` with every free database holding a key beside budgetlab's mark: exit 2, one line naming them."""
    from budgetlab import labs
    from budgetlab.stories import lab4

    control = _control()
    planted = redis_planter(_free_databases(control), CANARY, marked=True)
    control.close()
    leases = []
    try:
        assert planted, "no free database holding only budgetlab's mark, or nothing, to plant a key in"
        # Whatever could not be planted (a crashed run's leftovers) is held, so the check meets only the planted ones.
        with pytest.raises(BudgetlabError, match=SHORTAGE):
            for _ in range(256):
                leases.append(RedisLease())
        lab = labs.by_slug(lab4.SLUG)
        done = subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", "check", str(lab.number)],
                              env=dict(os.environ, COLUMNS="400"), capture_output=True, text=True, timeout=300)
        output = done.stdout + done.stderr
        assert done.returncode == 2, f"exit {done.returncode}:\n{output[-3000:]}"
        lines = [line for line in output.splitlines() if " alone: " in line]
        assert lines, f"no line names the databases left alone:\n{output[-3000:]}"
        assert set(planted) <= _left_alone(lines[-1]), lines[-1]
        for number, client in planted.items():
            assert client.get(CANARY) == b"kept", f"the check emptied database {number}"
    finally:
        for lease in leases:
            lease.release()
