"""Lab 5's symptoms say only what its checks observed: each sentence family read from a state built by hand.

The checks that need no transaction are called with a sampler written here
and a load that only counts (what the check's load connection would have
run); the transaction checks' sentences are read from the plain values they
pass in. No stack: nothing here connects to a server.
"""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import pytest
from django.db import DatabaseError

from budgetlab.scenarios.lab5 import Reading, fits, rate_bounds, verdict, workload_note
from budgetlab.stories.lab5 import SLUG

from .graders import loaded


@pytest.fixture(scope="module")
def graders():
    """The lab's grader module, whose `say` builds its sentences."""
    with loaded(SLUG, "test_lab5_sampler.py") as module:
        yield module


class CountingLoad:
    """What the check's load connection reports: the scans it ran, all published, with no server to run them on."""

    def __init__(self) -> None:
        self.total = 0

    def __call__(self, scans: int) -> None:
        self.total += scans


def _said(check, **fixtures) -> str:
    with pytest.raises(AssertionError) as failed:
        check(**fixtures)
    return str(failed.value).split("\nassert ")[0]


def _delta(graders, scan_delta) -> str:
    return _said(graders.test_delta_in_autocommit_counts_every_scan, sampler=SimpleNamespace(scan_delta=scan_delta),
                 probe="scan_probe", load=CountingLoad(), scans=random.Random(5))


def test_a_delta_that_never_ran_its_workload_never_says_the_load_made_scans(graders):
    """A sampler that returns without calling the workload: no scans were made, and the sentence says so."""
    said = _delta(graders, lambda table, workload: 0)
    assert said == ("scan_delta returned 0 with no transaction open without running its workload, so the load made "
                    "no scans"), said


def test_a_delta_that_ran_its_workload_twice_says_how_often_and_what_it_made(graders):
    def twice(table, workload):
        workload()
        workload()
        return 0

    said = _delta(graders, twice)
    made = re.fullmatch(r"scan_delta ran its workload 2 times with no transaction open, which made (\d+) scans; "
                        r"scan_delta counted 0", said)
    assert made and int(made[1]) % 2 == 0, said


def test_a_frozen_delta_says_the_scans_the_load_made_and_the_count(graders):
    def frozen(table, workload):
        workload()
        return 0

    said = _delta(graders, frozen)
    assert re.fullmatch(r"the load made \d+ scans while scan_delta watched with no transaction open; "
                        r"scan_delta counted 0", said), said


def test_an_error_of_the_learners_code_is_named_as_raised(graders):
    def broken(table, workload):
        raise LookupError("no table named 'scan_probe'\nsecond line")

    said = _delta(graders, broken)
    assert said == "scan_delta raised LookupError: no table named 'scan_probe'", said


def _rates(graders, scan_rates) -> str:
    return _said(graders.test_window_rates_follow_a_bursty_load, sampler=SimpleNamespace(scan_rates=scan_rates),
                 probe="scan_probe", load=CountingLoad(), scans=random.Random(5))


def test_rates_for_windows_that_never_came_are_never_said_to_have_run(graders):
    """A sampler that never waits: the load ran none of its windows, and the sentence says it never got to."""
    said = _rates(graders, lambda table, window, windows, wait, clock: [0.0] * windows)
    assert said == ("the load's 4 windows with no transaction open never came, since scan_rates let 0 s pass of "
                    "the 2 s it was asked for; scan_rates reported 0, 0, 0, 0"), said

    def half(table, window, windows, wait, clock):
        wait(window * 2)
        return [0.0] * windows

    said = _rates(graders, half)
    assert re.fullmatch(r"the load ran \d+, \d+ scans/s in the first 2 of its 4 windows with no transaction open "
                        r"and never reached the others, since scan_rates let 1 s pass of the 2 s it was asked for; "
                        r"scan_rates reported 0, 0, 0, 0", said), said


def test_averaged_rates_are_shown_beside_every_window_the_load_ran(graders):
    def averaged(table, window, windows, wait, clock):
        wait(window * windows)
        return [505.0] * windows

    said = _rates(graders, averaged)
    assert re.fullmatch(r"the load ran \d+, \d+, \d+, \d+ scans/s in its 4 windows with no transaction open; "
                        r"scan_rates reported 505, 505, 505, 505", said), said
    said = _rates(graders, lambda table, window, windows, wait, clock: 505.0)
    assert said == "scan_rates was asked for 4 windows with no transaction open and returned 505.0", said


def test_a_caller_block_that_broke_is_blamed_on_the_sampler_only_after_it_ran(graders):
    """Before any of the learner's code ran, the block's error is the check's own and stays an error."""
    with pytest.raises(DatabaseError):
        with graders.leaves_atomic("transaction.atomic() block"):
            raise DatabaseError("server closed the connection")
    with pytest.raises(AssertionError) as failed:
        with graders.leaves_atomic("transaction.atomic() block"):
            graders.call("seq_scans", lambda table: 7, "scan_probe")
            raise DatabaseError("current transaction is aborted\ncommands ignored")
    assert str(failed.value) == ("the caller's transaction.atomic() block raised DatabaseError: current transaction "
                                 "is aborted after the sampler ran inside it"), failed.value


def test_the_transaction_sentences_say_what_the_caller_saw(graders):
    say = graders.say
    assert say.connection_replaced(4101, 4188) == (
        "after the sampler ran, the caller's queries went to another database backend (PID 4101 before, 4188 "
        "after), outside the transaction it had open")
    assert say.transaction_ended("918", None) == \
        "the caller's transaction ended while the sampler ran (transaction 918 became none)"
    assert say.transaction_ended("918", "921").endswith("(transaction 918 became 921)")
    assert say.counter_inside_savepoint(12, 40) == (
        "seq_scans returned 12 inside a savepoint; by then the load had made 40 scans of the table, each published "
        "to PostgreSQL's counters before it went on")
    # The committed row: seen from another connection, or after the caller's rollback; no committer is named.
    assert "sampler had" not in say.ROW_COMMITTED + say.ROW_SURVIVED


def test_connections_left_open_are_named_as_the_server_listed_them(graders):
    say = graders.say
    assert say.connections_left(["lab5-sampler", "no name", "lab5-sampler"]) == (
        "connections to the check's database were still open after the sampler returned (application names: "
        "lab5-sampler, no name), so it could not be dropped")
    assert "none left when they were looked up" in say.connections_left([])


def test_the_retraction_sentences_say_what_the_docstring_lacks_not_what_the_learner_meant(graders):
    said = _said(graders.test_docstring_retracts_the_unmeasured_split, sampler=SimpleNamespace(__doc__="Measured."))
    assert said == "sampler.py's module docstring has no line that begins with 'Retracted:'", said
    note = "Retracted: the 64/36 split was never shown; " + "both figures came from one afternoon " * 3
    said = _said(graders.test_docstring_retracts_the_unmeasured_split, sampler=SimpleNamespace(__doc__=note))
    assert said.startswith('the retraction "Retracted: the 64/36 split was never shown;'), said
    assert "…\" never mentions" in said, said
    assert said.endswith("never mentions the transaction or the snapshot the two reads shared"), said


def test_the_runs_lines_say_what_scan_delta_ran_and_what_the_sampler_returned():
    assert workload_note(0, 0) == "[yellow]scan_delta never ran its workload, so the load never started[/]"
    assert workload_note(1, 0) is None, "a workload that ran but whose load stopped early is not 'never ran'"
    assert workload_note(2, 1980) == "[yellow]scan_delta ran its workload 2 times; the load ran 1980 scans in all[/]"
    assert "did not return what PostgreSQL counted" in verdict(False)
    assert "agrees with PostgreSQL" in verdict(True)


def _readings(*moments: tuple[float, int]) -> list[Reading]:
    """(time, counter) pairs as the run's witness would have read them, each read taking a millisecond."""
    return [Reading(at, count, at + 0.001) for at, count in moments]


def test_a_rate_sampled_late_on_a_busy_machine_is_judged_against_what_was_counted_while_it_sampled():
    """Woken 0.25 s late in a 990/s burst, the sampler's true figure is 25 % off the run's own planned-moment sample."""
    burst_then_quiet = _readings((0.0, 0), (0.002, 0), (1.25, 1238), (1.252, 1240), (2.0, 1270), (2.002, 1270))
    bounds = rate_bounds(burst_then_quiet, 1.0)
    assert len(bounds) == 2
    first, second = bounds
    assert fits(1238 / 1.25, first) and fits(1238 / 1.0, first), first  # divided by the time it measured, or planned
    assert fits((1270 - 1238) / 0.75, second) and fits(1270 - 1238, second), second
    assert not fits(0, first) and not fits(0.0, second), "a frozen snapshot's zero is never what was counted"
    assert not fits(1270 / 2, second), "the average over both windows is not the quiet window's rate"
    assert not fits("990", first), "a rate that is not a number"


def test_a_sampler_that_did_not_wait_once_per_window_cannot_be_placed():
    """The starter waits once for all its windows: the run then compares it with its own samples instead."""
    assert rate_bounds(_readings((0.0, 0), (0.001, 0)), 1.0) is None
    assert rate_bounds(_readings((0.0, 0), (0.001, 0), (6.0, 3000)), 1.0) is None
    assert len(rate_bounds(_readings((0.0, 0), (0.001, 0), (6.0, 3000), (6.001, 3000)), 1.0)) == 1
