"""Lab 2's story, shared by `budgetlab run 2` and its checks: three kinds of batch job, their workloads, their endings.

Kontor's CSV imports, bulk uploads and agent runs share one loop shape and
one bug: the soft limit is blamed on the item in flight and swallowed. A
Kind is one of those subsystems (its task, its job table, the budgets the
lab declares). The checks run ten jobs whose oversized ones each meet a
model call that never ends at a known item; the run shows three big jobs
that meet a slow stretch of the model provider. An Ending is how one job
and its task ended, read once; `problem()` says in the story's words what
is wrong with it.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from budgetlab import labs
from budgetlab.inworker import clock
from budgetlab.stories.reading import stored_at
from kontor import datagen
from kontor.latency import MODEL_CALL, keyed_rng

SLUG = labs.slug_of(2)
SEED = 7
# How long after a task's hard limit a check still waits before it calls the task stuck, in wall seconds.
MARGIN = 1.5


@dataclass(frozen=True)
class Kind:
    """One of the three subsystems: its task, its job table and the budgets the lab declares for it."""

    label: str
    module: str  # the lab's module that holds the task: lab2_batch_jobs.<module>
    task: str
    model_name: str  # the job table's model in kontor.books.models
    unit: str  # what the job counts, plural: "rows"
    item: str  # how an item is named in failures and latency keys: "row" -> "row 60", "row-60"
    soft: int  # production seconds, as declared in the lab's decorators
    hard: int

    @property
    def model(self):
        from kontor.books import models

        return getattr(models, self.model_name)

    def written(self, job) -> list[int]:
        """Return the numbers of the items this job wrote (import rows are counted, not numbered: all 0)."""
        from kontor.books.models import AgentStep, Document, Transaction

        if self.model_name == "ImportJob":
            return [0] * Transaction.objects.filter(import_job=job).count()
        if self.model_name == "BulkUpload":
            names = Document.objects.filter(bulk_upload=job).values_list("filename", flat=True)
            return sorted(int(re.search(r"\d+", name).group()) for name in names)
        return sorted(AgentStep.objects.filter(run=job).values_list("index", flat=True))


IMPORT = Kind("import job", "imports", "kontor.imports.import_csv", "ImportJob", "rows", "row", 600, 900)
UPLOAD = Kind("bulk upload", "uploads", "kontor.uploads.process_upload", "BulkUpload", "files", "file", 600, 900)
AGENT = Kind("agent run", "agent_runs", "kontor.agents.run_agent", "AgentRun", "steps", "step", 300, 360)
KINDS = (IMPORT, UPLOAD, AGENT)
MODULES = [f"{SLUG}.{kind.module}" for kind in KINDS]


# The checks' workload. One worker runs ten jobs at once. The three oversized ones each
# have one item whose model call outlasts any budget, so the soft limit always fires inside
# a model call, at a known item (the cut). The items before it take a fraction of the soft
# limit even on a busy machine; the items after it are more than the window up to the hard
# limit could finish. The seven jobs that fit are smaller than the cuts, so they never meet one.
CUT = {IMPORT: 60, UPLOAD: 15, AGENT: 12}
LATENCY = {IMPORT: 1.5, UPLOAD: 6.0, AGENT: 4.0}  # production seconds per model call
NEVER_ENDS = 100_000.0
# Broken items, also in the oversized jobs before their cuts, so "items written" differs from "items reached".
BAD_ROWS = (7, 23, 41, 300)

# The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on: the one in force.
worker_clock = clock.factor
UNREADABLE_FILES = (12, 13)
UNANSWERED_STEPS = (9, 10)


# Where a landing job's soft limit lands (see LANDINGS): in a database statement of an item's work, in the
# handler that records an item's failure, in the call that marks the job completed.
STATEMENT, HANDLER, FINALIZING = "statement", "handler", "finalizing"
# Which write each landing holds: the nth item written (a statement inside the per-item work).
STALLED_ITEM = 4


@dataclass(frozen=True)
class Spec:
    """One job to run: its kind, its size, for an import its malformed rows, and where its soft limit lands."""

    kind: Kind
    size: int
    bad_rows: tuple[int, ...] = ()
    landing: str = ""  # "": wherever the job is when its time runs out (a model call, for OVERSIZED)

    def bad_items(self) -> list[int]:
        """Return the numbers of the items that fail on their own (bad rows, unreadable files, unanswered steps)."""
        numbers = {IMPORT: self.bad_rows, UPLOAD: UNREADABLE_FILES, AGENT: UNANSWERED_STEPS}[self.kind]
        return sorted(n for n in numbers if n <= self.size)

    def written_by_the_cut(self) -> int:
        """How many items a job too big for its budget has written when its limit lands in the model call at its cut."""
        cut = CUT[self.kind]
        return cut - 1 - sum(1 for n in self.bad_items() if n < cut)

    def written_when_time_runs_out(self) -> int:
        """At most how many items this job has written when its soft limit lands where it is made to (a landing
        job's held write, or an oversized job's cut): code that wrote more went on after its limit."""
        bad = self.bad_items()
        if self.landing == STATEMENT:
            # The held insert itself may still be committed once the hold ends, its writer gone or not.
            return STALLED_ITEM
        if self.landing == HANDLER:
            return bad[0] - 1  # every item before the first failed one
        if self.landing == FINALIZING:
            return self.size - len(bad)
        return self.written_by_the_cut()

    def planned_seconds(self) -> float:
        """The production seconds of model calls this job's items are planned to take (a job that fits its budget)."""
        return self.size * LATENCY[self.kind]

    def where(self) -> str:
        """Say where this job's soft limit is made to land, in the story's words."""
        if self.landing == STATEMENT:
            return f"while {self.kind.item} {STALLED_ITEM} was being written to the database"
        if self.landing == HANDLER:
            return f"while the failure of {self.kind.item} {self.bad_items()[0]} was being recorded"
        if self.landing == FINALIZING:
            return f"while the job, all its {self.kind.unit} done, was being marked completed"
        return ""


OVERSIZED = (Spec(IMPORT, 1772, BAD_ROWS), Spec(UPLOAD, 95), Spec(AGENT, 100))
WITH_BAD_ITEMS = (Spec(IMPORT, 40, (3, 17, 18, 40)), Spec(IMPORT, 5, (1, 2, 3, 4, 5)), Spec(UPLOAD, 14),
                  Spec(AGENT, 11))
FITTING = (Spec(IMPORT, 50), Spec(UPLOAD, 10), Spec(AGENT, 8))
# Jobs small enough to fit their budgets, each held at one write until its soft limit lands there (a Stall):
# a database statement of an item's work, the handler of an item that failed, the final write. Smaller than the
# cuts, so no model call of theirs outlasts the budget; the failing items are the ones BAD_ROWS and the
# latency plan fail in every job of their kind. Imports and uploads only: after a limit that lands in a
# statement the job is ended on a fresh connection, and an agent run's 60 s between its soft and hard limit
# are 0.3 s of wall time on the lab clock, less than a busy machine took for that (the hard limit killed
# them in 2 of 3 loaded runs).
LANDINGS = tuple(Spec(kind, size, bad, landing)
                 for kind, sizes, bad in ((IMPORT, (8, 12, 8), (6,)), (UPLOAD, (8, 14, 5), ()))
                 for landing, size in zip((STATEMENT, HANDLER, FINALIZING), sizes))
# The item tables and the column that names their job, for the statement landing.
ITEM_TABLES = {"ImportJob": ("Transaction", "import_job_id"), "BulkUpload": ("Document", "bulk_upload_id"),
               "AgentRun": ("AgentStep", "run_id")}


def stall_of(spec: Spec, job):
    """Return the Stall that holds this landing job's chosen write until its soft limit lands there."""
    from kontor.books import models

    from budgetlab.harness.stalls import Stall

    name = f"{spec.landing}_{spec.kind.module}_{job.pk}"
    table = spec.kind.model._meta.db_table
    if spec.landing == STATEMENT:
        item_model, column = ITEM_TABLES[spec.kind.model_name]
        return Stall(name, getattr(models, item_model)._meta.db_table, "INSERT", f"NEW.{column} = {job.pk}",
                     nth=STALLED_ITEM)
    if spec.landing == HANDLER:
        return Stall(name, table, "UPDATE", f"NEW.id = {job.pk} AND NEW.failures IS DISTINCT FROM OLD.failures")
    return Stall(name, table, "UPDATE",
                 f"NEW.id = {job.pk} AND NEW.status = '{spec.kind.model.COMPLETED}' AND OLD.status <> NEW.status")


def latency_plan() -> dict:
    """Return the latency plan of the checks' run, in production seconds."""
    keys = {}
    for kind, size in ((UPLOAD, 95), (AGENT, 100)):
        keys.update({f"{kind.item}-{n}": LATENCY[kind] for n in range(1, size + 1)})
    for kind in KINDS:
        keys[f"{kind.item}-{CUT[kind]}"] = NEVER_ENDS
    return {"seed": SEED,
            "model": {"default": LATENCY[IMPORT], "keys": keys, "fail": [f"step-{n}" for n in UNANSWERED_STEPS]},
            "ocr": {"default": 0.03, "fail": [f"file-{n}" for n in UNREADABLE_FILES]}}


def csv_upload(rows: int, bad: tuple[int, ...]) -> str:
    """Return a bank export of `rows` rows whose 1-based rows in `bad` carry an impossible date."""
    text, _ = datagen.import_csv(SEED, rows, 0)
    lines = text.splitlines()
    for number in bad:
        lines[number] = "31.02.2026" + lines[number][len("2026-01-01"):]
    return "\n".join(lines) + "\n"


def create_job(spec: Spec):
    """Create a job as Kontor's web process would, before the task is sent."""
    if spec.kind is IMPORT:
        return _create(IMPORT, filename="export.csv", csv_text=csv_upload(spec.size, spec.bad_rows))
    if spec.kind is UPLOAD:
        return _create(UPLOAD, files=datagen.document_batch(SEED, spec.size))
    return _create(AGENT, goal="Prepare the VAT return for the first quarter",
                   steps=[f"Check booking {n} against its receipt" for n in range(1, spec.size + 1)])


def _create(kind: Kind, **fields):
    from kontor.books.models import Company

    return kind.model.objects.create(company=Company.objects.order_by("id").first(), **fields)


# The run's workload: three big jobs, each meeting a slow stretch of the model provider
# (first item, how many, production seconds a call). The limit should land in a model call, as it
# nearly always does in production. On the lab clock an item's database writes take 200 times their
# share of production time (a wall millisecond is 0.2 production seconds), and on a busy machine a
# row's writes took up to 4 production seconds: a stretch that began at row 150 then began after the
# soft limit, and a stretch of twelve 120 s calls still left the limit a write between two calls to
# land in (a CI rehearsal's import job told the story of a cut query). So each stretch begins at a
# quarter of the soft limit or less even at that pace, and each of its two calls lasts past the hard
# limit: the soft limit lands in the first however late a busy pool delivers it, and code that carries
# on meets the hard limit in the second, not in rows whose count would depend on the machine.
ROWS, MALFORMED, FILES, STEPS = 1772, 12, 95, 60
SLOW_STRETCH = {"row": (30, 2, 900.0), "file": (12, 2, 900.0), "step": (12, 2, 360.0)}


def run_latency_plan() -> dict:
    """Return the run's latencies, in production seconds.

    A bank row's category prompt is short (1.2 s), a receipt's is long (9 to
    13 s a file), agent steps follow the measured distribution of model calls
    (median 5.5 s, p99 35 s), and each job meets one slow stretch.
    """
    rng = random.Random(f"{SEED}:lab2-files")
    keys = {f"file-{n}": round(rng.uniform(9.0, 13.0), 2) for n in range(1, FILES + 1)}
    keys.update({f"step-{n}": round(MODEL_CALL.sample(keyed_rng(SEED, f"model:step-{n}")), 2)
                 for n in range(1, STEPS + 1)})
    for item, (first, count, seconds) in SLOW_STRETCH.items():
        keys.update({f"{item}-{n}": seconds for n in range(first, first + count)})
    return {"seed": SEED, "model": {"default": 1.2, "keys": keys}, "ocr": {"default": 0.03}}


def create_run_jobs() -> dict[Kind, object]:
    """Create the run's three jobs: a quarter's bank export, a bulk upload of receipts, a VAT-return agent run."""
    csv_text, _ = datagen.import_csv(SEED, ROWS, MALFORMED)
    return {IMPORT: _create(IMPORT, filename="umsaetze-2026-q1.csv", csv_text=csv_text),
            UPLOAD: _create(UPLOAD, files=datagen.document_batch(SEED, FILES)),
            AGENT: _create(AGENT, goal="Prepare the VAT return for the first quarter of 2026",
                           steps=[f"Check booking {n} of the quarter against its receipt" for n in range(1, STEPS + 1)])}


@dataclass
class Ending:
    """How one job and its task ended, read once, so checks compare plain values."""

    spec: Spec
    job_id: int
    status: str
    running: str
    final: bool
    message: str
    items_total: int
    failures: list[dict]
    written: list[int]
    state: str
    exception: str = ""  # the type name of what the task raised, if it failed
    result_text: str = ""
    ready: bool = True  # whether the task had ended when the job was read
    extra: dict = field(default_factory=dict)
    landed: bool = False  # for a landing job, whether its code reached the held write (see LANDINGS)
    # Wall seconds the most kept threads of the worker and of its database (summed) waited for a core between the
    # job's soft and hard limits.
    lost: float = 0.0
    # The same, between the job's start and its soft limit.
    lost_in_budget: float = 0.0
    # Production seconds from the job's start to its final write (None: it has none).
    seconds: float | None = None
    # For a task the pool's master killed at its hard limit after its child had stored an ending of its own:
    # production seconds from the job's start to that ending (state, exception and result_text are the child's).
    ended_before_kill: float | None = None

    def kill_unmeasured(self) -> bool:
        """Whether a busy machine, not the code, may have kept this task from ending before its hard limit.

        Between the soft and the hard limit the handler has a few tenths of
        a wall second on the lab clock (an agent run's 60 s are 0.3 s at
        200x); a worker kept waiting for a core for half of that window
        cannot be said to have used it (see stories.stallmeter). Only for a
        job that wrote nothing past where its limit landed (its cut, or its
        held write): code that went on after its soft limit wrote more, and
        its kill is its own.
        """
        return (len(self.written) <= self.spec.written_when_time_runs_out()
                and self.lost >= 0.5 * clock.to_wall(self.kind.hard - self.kind.soft))

    def overrun_unmeasured(self) -> bool:
        """Whether a busy machine, not the code, may have carried a job that fits its budget past it.

        A job that fits plans its model calls well inside its soft limit; when
        it ran out of time (no final write before the limit, or none at all)
        while the worker kept waiting for a core for half of what the plan left
        to spare, the machine took that time (a CI pass beside another: a
        50-row import still open at its hard limit).
        """
        ran_out = self.seconds is None or self.seconds >= self.kind.soft
        spare = self.kind.soft - self.spec.planned_seconds()
        return ran_out and clock.to_production(self.lost_in_budget) >= 0.5 * spare

    def waited_between_limits(self) -> str:
        """Say what `lost` measured, for a symptom that is the machine's."""
        return (f"the worker and its database waited {self.lost:.2f} s of wall time for a core between its soft and "
                "hard limits")

    def waited_in_budget(self) -> str:
        """Say what `lost_in_budget` measured, for a symptom that is the machine's."""
        return (f"the worker and its database waited {self.lost_in_budget:.2f} s of wall time for a core within its "
                f"{self.kind.soft} s budget")

    @property
    def kind(self) -> Kind:
        return self.spec.kind

    @property
    def name(self) -> str:
        return f"{self.kind.label} {self.job_id}"

    def failed_items(self) -> list[int]:
        return sorted(int(m.group()) for f in self.failures if (m := re.search(r"\d+", str(f.get("item", "")))))

    def problem(self, margin: float = MARGIN) -> str:
        """Say what is wrong with this ending, in the story's terms; "" when the job ended as it should."""
        raised = self.exception if self.state == "FAILURE" else ""
        if raised == "TimeLimitExceeded":
            what = "no final status, and never will: the hard limit killed the worker child that ran it"
        elif not self.ready:
            what = f"no final status, and its task had not ended {margin:g} s (wall) after its hard limit"
        elif self.state == "SUCCESS" and self.status != self.kind.model.COMPLETED:
            what = f"'{self.status}', yet its task reported SUCCESS: the caller never learns it ran out of time"
        elif raised in ("OperationalError", "InterfaceError") and not self.final:
            what = (f"no final status: the soft limit cut a database query short, and the next write on that "
                    f"connection failed ({raised}); see 'One more trap' on the lab page")
        elif raised and raised != "SoftTimeLimitExceeded":
            what = f"'{self.status}', and its task raised {raised}"
        elif not self.final or self.status == self.kind.model.COMPLETED:
            what = f"'{self.status}' although it ran out of time"
        else:
            return ""
        return f"{self.name}: {what}"


def read_ending(spec: Spec, job, result, landed: bool = False, meter=None, stored: list[dict] = ()) -> Ending:
    """Read how a job and its task ended; `stored` is every result stored for the task, in order
    (reading.StoredResults), so that an ending the pool's master wrote a kill over is still read."""
    from celery.states import READY_STATES

    kind = spec.kind
    job.refresh_from_db()
    ready = result.ready()
    state, value, ended_before_kill = result.state, result.result if ready else None, None
    # Only endings: code may store progress of its own (update_state) before it ends.
    own, *later = [meta for meta in stored if meta.get("status") in READY_STATES] or [None]
    if own is not None and not killed_by(own) and job.started_at is not None and any(map(killed_by, later)):
        state, value, ready = own["status"], own["result"], True
        ended_before_kill = stored_at(own) - job.started_at.timestamp()
    exception = type(value).__name__ if isinstance(value, BaseException) else ""
    return Ending(spec=spec, job_id=job.pk, status=job.status, running=kind.model.RUNNING, final=job.is_final,
                  message=job.message, items_total=job.items_total, failures=list(job.failures),
                  written=kind.written(job), state=state, exception=exception,
                  result_text=repr(value) if value is not None else "", ready=ready, landed=landed,
                  lost=_lost(job, meter, kind.soft, kind.hard), lost_in_budget=_lost(job, meter, 0, kind.soft),
                  seconds=(job.finished_at - job.started_at).total_seconds()
                  if job.is_final and job.started_at and job.finished_at else None,
                  ended_before_kill=ended_before_kill)


def killed_by(meta: dict) -> bool:
    """Whether a stored result is a hard limit's: what the pool's master stores when it kills a child."""
    return type(meta.get("result")).__name__ == "TimeLimitExceeded"


def _lost(job, meter, since: float, until: float) -> float:
    """Wall seconds the worker and its database waited for a core between two moments of the job, in production
    seconds from its start (0 unmeasured)."""
    if meter is None or job.started_at is None:
        return 0.0
    started = job.started_at.timestamp()
    return meter.lost(clock.wall_time(started + since), clock.wall_time(started + until))


def hard_deadline(sent_at: float) -> float:
    """Return the wall time by which every task must have ended: the latest hard limit plus a margin."""
    return sent_at + max(clock.to_wall(kind.hard) for kind in KINDS) + MARGIN

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
TRANSCRIPTS = {
    "check-starter": {"masks": (
        # Counts of rows written before a limit depend on the machine's load.
        (r"with [\d,]+ of ([\d,]+) (rows|files|steps)", r"with N of \1 \2"),
        # Whether, and how many, children a hard limit had ended when the check read the worker's log
        # depends on how far the kills had got.
        (r"; a hard limit ended \d+ of the worker's children", ""),
    )},
    # The three jobs meet their limits within milliseconds of each other, so the run is compared unordered.
    "run": {"unordered": True, "masks": (
        (r"t = [\d,]+ s production · [\d.]+ s wall", "t = T s production · W s wall"),
        (r"^\d[\d,]* s +\d+\.\d+ s ", "T s W s "),
        (r"\b[\d,]+ of ([\d,]+) (rows|files|steps)", r"N of \1 \2"),
        (r"\+[1-9][\d,]* (rows|files|steps)", r"+N \1"),
        (r"\b(row|file|step)([- ])\d+", r"\1\2N"),
        (r"for [\d,]+ s \(hard", "for T s (hard"),
        (r"pid([ :])\d+", r"pid\1PID"),
        # A child usually dies of the SIGKILL; on a loaded machine it may finish unwinding from the SIGTERM first.
        # Either may be wrapped onto the next line, wherever a PID's width puts the break.
        (r"killed\s+by\s+SIGKILL|ended\s+by\s+the\s+SIGTERM\s+\([^)]*\)", "ended by the hard limit"),
        (r"exited with '[^']+'", "exited with 'STATUS'"),
        (r"^\[\d\d:\d\d:\d\d,\d{3}:", "[HH:MM:SS,mmm:"),
        (r"\[[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}\]", "[UUID]"),
    )},
}
