"""The one line a check or run prints when no Redis database can be leased says what the lease found, and nothing more."""

from budgetlab.paths import repo_root
from budgetlab.stack.leases import MARK_KEY, shortage

SERVER = "redis://127.0.0.1:6379/0"


def test_databases_that_are_only_leased_ask_to_wait():
    """Every database held by another check or run: the line says so, and offers to empty none."""
    said = shortage(SERVER, True, 15, 15, 0, [])
    assert said == "all 15 Redis databases are in use by other checks or runs; try again when they have finished"


def test_databases_without_the_mark_are_counted_never_offered_for_emptying():
    """Databases holding keys without budgetlab's mark are a person's: counted, never named, no FLUSHDB."""
    said = shortage(SERVER, True, 15, 0, 15, [])
    assert said.startswith("no Redis database on 127.0.0.1:6379 can be used: 15 of 15 hold keys budgetlab "
                           "cannot show it wrote (it leases only databases that are empty or hold nothing but "
                           f"its key {MARK_KEY})"), said
    assert "FLUSHDB" not in said and "alone" not in said and "in use" not in said, said


def test_the_held_ones_are_counted_beside_the_others():
    said = shortage(SERVER, True, 15, 1, 14, [])
    assert "14 of 15 hold keys budgetlab cannot show it wrote and the other one is in use by a check or run" in said
    said = shortage(SERVER, True, 15, 3, 10, [2])
    assert "11 of 15 hold keys budgetlab cannot show it wrote and the other 3 are in use by checks or runs" in said


def test_marked_databases_beside_others_keys_are_named_with_how_to_look_and_empty_them():
    """Each marked database left alone is named; the commands address the first, the others are listed."""
    said = shortage(SERVER, True, 15, 0, 12, [4, 7, 9])
    assert "; it left databases 4, 7 and 9 alone: each carries that key beside keys" in said, said
    assert ("look with 'redis-cli -u redis://127.0.0.1:6379/4 --scan' and, if nothing there is anybody's, "
            "empty it with 'redis-cli -u redis://127.0.0.1:6379/4 FLUSHDB' (the same for databases 7 and 9)") in said
    assert "\n" not in said


def test_a_password_is_never_shown_and_redis_cli_asks_for_it():
    said = shortage("redis://me:s3cret@10.0.0.5:6380/0", True, 15, 0, 14, [3])
    assert "s3cret" not in said, said
    assert "'redis-cli -u redis://me@10.0.0.5:6380/3 --askpass --scan'" in said, said


def test_on_the_embedded_server_the_remedy_is_a_restart():
    """The embedded Redis keeps nothing on disk: a restart empties it, and its password stays in the secrets file."""
    said = shortage("redis://:s3cret@127.0.0.1:50000/0", False, 31, 0, 1, [5])
    assert "it left database 5 alone: it carries that key" in said, said
    assert said.endswith("; restart the stack ('budgetlab stack down', then 'budgetlab stack up'), which empties them")
    assert "redis-cli" not in said and "s3cret" not in said


def test_the_page_on_own_servers_shows_the_line_the_lease_prints():
    """docs/own-servers.md quotes the shortage for one marked database on the machine's Redis word for word."""
    page = (repo_root() / "docs" / "own-servers.md").read_text(encoding="utf-8")
    assert shortage(SERVER, True, 15, 0, 14, [7]) in page, "the page's example is not what the lease prints"
