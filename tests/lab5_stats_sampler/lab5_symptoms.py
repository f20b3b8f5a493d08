"""The sentences lab 5's checks say, each built from what a check observed and from nothing else.

test_lab5_sampler.py calls these with plain values; tests/harness/test_lab5_symptoms.py
builds each observed state and reads the sentence. What the load made is what the
check's own connection ran and published; what PostgreSQL counted is read from its
counter in autocommit; a sentence never says the load ran what it never got to run.
"""

from __future__ import annotations

import numbers


def _error(error: BaseException) -> str:
    """The exception's type and the first line of its message."""
    return f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0]}"


def raised(what: str, error: BaseException) -> str:
    return f"{what} raised {_error(error)}"


def delta(where: str, runs: int, made: int, counted) -> str:
    """scan_delta around a workload: how often it ran the workload, the scans those runs made, and its answer."""
    if runs == 0:
        return f"scan_delta returned {counted!r} {where} without running its workload, so the load made no scans"
    if runs > 1:
        return (f"scan_delta ran its workload {runs} times {where}, which made {made} scans; "
                f"scan_delta counted {counted}")
    return f"the load made {made} scans while scan_delta watched {where}; scan_delta counted {counted}"


def counter_inside_savepoint(returned, made: int) -> str:
    return (f"seq_scans returned {returned} inside a savepoint; by then the load had made {made} scans of the "
            f"table, each published to PostgreSQL's counters before it went on")


def broke_atomic(what: str, error: BaseException) -> str:
    return f"the caller's {what} raised {_error(error)} after the sampler ran inside it"


def connection_replaced(pid: int, pid_after: int) -> str:
    return (f"after the sampler ran, the caller's queries went to another database backend (PID {pid} before, "
            f"{pid_after} after), outside the transaction it had open")


def transaction_ended(xact: str, xact_after: str | None) -> str:
    return (f"the caller's transaction ended while the sampler ran (transaction {xact} became "
            f"{xact_after or 'none'})")


ROW_GONE = "the row the caller had written, not yet committed, was gone after the sampler ran"
ROW_COMMITTED = ("another connection saw the row the caller had written in its open transaction after the "
                 "sampler ran: it had been committed")
ROW_SURVIVED = "the caller's row was still there after the caller rolled its transaction back: it had been committed"


def rates_text(values) -> str:
    return ", ".join(f"{value:.0f}" if isinstance(value, numbers.Real) else repr(value) for value in values)


def rates_shape(windows: int, where: str, got) -> str:
    return f"scan_rates was asked for {windows} windows {where} and returned {got!r}"


def rates(ran: list[float], windows: int, window: float, waited: float, where: str, got) -> str:
    """The rates the load ran in the windows scan_rates let pass (`waited` seconds of them), beside what it reported."""
    reported = f"scan_rates reported {rates_text(got)}"
    if len(ran) == windows:
        return f"the load ran {rates_text(ran)} scans/s in its {windows} windows {where}; {reported}"
    asked = f"scan_rates let {waited:g} s pass of the {windows * window:g} s it was asked for"
    if not ran:
        return f"the load's {windows} windows {where} never came, since {asked}; {reported}"
    return (f"the load ran {rates_text(ran)} scans/s in the first {len(ran)} of its {windows} windows {where} and "
            f"never reached the others, since {asked}; {reported}")


def connections_left(names: list[str]) -> str:
    listed = ", ".join(sorted(set(names))) or "none left when they were looked up"
    return (f"connections to the check's database were still open after the sampler returned (application "
            f"names: {listed}), so it could not be dropped")


NO_RETRACTION = "sampler.py's module docstring has no line that begins with 'Retracted:'"


def retraction_without_cause(note: str) -> str:
    quoted = note if len(note) <= 80 else note[:79] + "…"
    return f"the retraction \"{quoted}\" never mentions the transaction or the snapshot the two reads shared"
