"""The sentences lab 4's checks say, each built from what a check observed and from nothing else.

test_reference_cache.py and lab4_probe.py call these with plain values;
tests/harness/test_lab4_symptoms.py builds each observed state and reads
the sentence. A sentence says "still" only where the earlier answer was
seen, and names a cause only where the check made it happen.
"""

from __future__ import annotations


def times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def reads(count: int) -> str:
    return "1 read" if count == 1 else f"{count} reads"


def batch(documents: int, transactions: int) -> str:
    return f"a batch of {documents} documents (categorised, their transactions written) and {transactions} transactions"


def worker(tasks: int, busy: int, concurrency: int) -> str:
    """The worker as the check saw it: how many of its processes the log shows running tasks, if any."""
    if busy:
        return f"as {tasks} tasks on a worker whose log shows {busy} of its {concurrency} processes running them"
    return f"as {tasks} tasks on a worker of {concurrency} processes"


def unfinished(count: int, sent: int, seconds: float) -> str:
    return f"{count} of {sent} tasks sent no result within {seconds:g} s wall"


def failed(count: int, sent: int, first: str) -> str:
    return f"{count} of {sent} tasks failed on the worker: {first}"


def worker_queries(batch: str, worker: str, per_process: dict[int, int]) -> str:
    """Django's query log of each process that categorised documents."""
    total, most = sum(per_process.values()), max(per_process.values(), default=0)
    return (f"{batch}, run {worker}, queried the category table {times(total)} while categorising documents, "
            f"{times(most)} in one process (Django's query log in each process)")


def worker_reads(batch: str, worker: str, scans: int) -> str:
    """PostgreSQL's count over the whole batch: every read of the table in the check's database meanwhile."""
    return f"PostgreSQL counted {reads(scans)} of the category table while {batch} ran {worker}"


def import_queries(queries: int) -> str:
    return (f"importing lab4_extraction_batch.tasks, which every worker does at start-up, queried the category "
            f"table {times(queries)} before any document arrived")


def batch_reads(batch: str, queries: int, scans: int, import_scans: int) -> str:
    """One process: its batch's queries, and what PostgreSQL counted while it imported and while it ran the batch."""
    said = (f"{batch} in one process queried the category table {times(queries)} (Django's query log), and "
            f"PostgreSQL counted {reads(scans)} of it during the batch")
    if import_scans:
        said += f" and {import_scans} while the process imported lab4_extraction_batch.tasks before it"
    return said


def batch_raised(batch: str, error: str) -> str:
    return f"{batch} in one process raised {error}"


# What each of the probe's phases does, for the sentence of one that raised.
PHASES = {
    "compare": "running the batch again on the uncached lookups to compare its output",
    "mutate": "changing what the lookups returned and asking them again",
    "invalidate": "saving, creating and deleting categories through the ORM and asking the lookups again",
}


def phase_raised(phase: str, error: str) -> str:
    return f"{PHASES[phase]} raised {error}"


def probe_ended(returncode: int, last: str) -> str:
    return f"the check's batch process ended with exit status {returncode} before it reported: {last}"


def probe_unfinished(batch: str, seconds: float, cpu: float | None, computing: bool | None,
                     where: tuple[str, int, str] | None) -> str:
    """The probe past its deadline: how long, what its CPU time says it did, and the lab line it was on, if any."""
    said = f"{batch} in one process had not finished after {seconds:.0f} s wall"
    if computing is not None:
        said += f", having used {cpu:.1f} s of CPU ({'computing' if computing else 'waiting'} most of that time)"
    if where:
        said += f"; it was at {where[0]}:{where[1]} (in {where[2]}) when the check stopped it"
    return said


def probe_kept(batch: str, seconds: float, kept: float) -> str:
    return (f"{batch} in one process had not finished after {seconds:.0f} s wall, {kept:.0f} s of which the machine "
            "kept it waiting for a core")


def renamed_lookup(before: str, after: str) -> str:
    """category('4210') after the rename, beside its answer before it."""
    said = "still said" if after == before else "said"
    return (f"after category 4210 was renamed 'Miete und Pacht' through the ORM, category('4210') in the same "
            f"process {said} {after!r}")


def renamed_in_table(before: str | None, after: str | None) -> str:
    """The name category_table() listed for 4210 after the rename (None: not listed), beside its name before."""
    if after is None:
        listed = "no longer listed it" if before is not None else "did not list it"
    else:
        listed = f"{'still listed' if after == before else 'listed'} it as {after!r}"
    return f"after category 4210 was renamed through the ORM, category_table() in the same process {listed}"


def new_keyword_match(match: str | None) -> str:
    return (f"after category 4210 got the keyword 'pacht' through the ORM, category_for('pacht') answered "
            f"{match!r}")


def created(listed: bool, match: str | None) -> str:
    seen = "did not list it" if not listed else f"matched farmland to {match!r}"
    return f"after category 4215 was created through the ORM, the same process {seen}"


def deleted_listed(listed_before: bool) -> str:
    return (f"after category 4250 was deleted through the ORM, category_table() in the same process "
            f"{'still listed' if listed_before else 'listed'} it")


def deleted_match(match: str | None) -> str:
    return (f"after category 4250 was deleted through the ORM, category_for('cleaning janitor') in the same "
            f"process answered {match!r}")


def changes(before: dict, after: dict) -> list[str]:
    """What the lookups answer differently now: snapshots of plain values ('table' rows, 'rent', 'match')."""
    changed = []
    if len(after["table"]) != len(before["table"]):
        changed.append(f"category_table() now has {len(after['table'])} rows, not {len(before['table'])}")
    elif after["table"] != before["table"]:
        index = next(i for i, (a, b) in enumerate(zip(before["table"], after["table"])) if a != b)
        changed.append(f"row {index + 1} of category_table() is now {tuple(after['table'][index][:2])}, "
                       f"was {tuple(before['table'][index][:2])}")
    if after["rent"] != before["rent"]:
        changed.append(f"category('4210').name is now {after['rent']!r}, was {before['rent']!r}")
    if after["match"] != before["match"]:
        changed.append(f"category_for('rent office') is now {after['match']!r}, was {before['match']!r}")
    return changed


def mutated(attempted: list[str], changed: list[str]) -> str:
    """A careless caller's changes that went through, and what the next call answered differently."""
    if not attempted:
        return (f"every change a caller tried on what the lookups returned it was refused, yet the next call "
                f"answered otherwise: {changed[0]}")
    return (f"a caller changed what the lookups returned it ({', '.join(attempted)}), and the next call answered "
            f"otherwise: {changed[0]}")


def first_difference(expected, actual) -> str:
    """Where one item's output first differs from the uncached lookups': a prompt's line, or an extraction's field."""
    if isinstance(expected, str) or isinstance(actual, str):
        if not (isinstance(expected, str) and isinstance(actual, str)):
            return f"the prompt is {actual!r}, uncached {expected!r}"
        ours, theirs = expected.splitlines(), actual.splitlines()
        for number, (want, got) in enumerate(zip(ours, theirs), start=1):
            if want != got:
                return f"prompt line {number} is {got!r}, uncached {want!r}"
        if len(ours) != len(theirs):
            return f"the prompt has {len(theirs)} lines, uncached {len(ours)}"
        return f"the prompt is {actual!r}, uncached {expected!r}"
    extraction_want, prompt_want = expected
    extraction_got, prompt_got = actual
    if extraction_want != extraction_got:
        for name in ("category_code", "vat_rate", "text"):
            if getattr(extraction_want, name, None) != getattr(extraction_got, name, None):
                return (f"the extraction's {name} is {getattr(extraction_got, name, None)!r}, "
                        f"uncached {getattr(extraction_want, name, None)!r}")
        return f"the extraction is {extraction_got!r}, uncached {extraction_want!r}"
    return first_difference(prompt_want, prompt_got)


def compared(different: int, items: int, first: tuple[str, str]) -> str:
    return f"{different} of {items} items differ from the uncached lookups' output; first, {first[0]}: {first[1]}"
