"""What lab 2's checks share: the three kinds of batch job, their inputs, and how to read how each one ended."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from budgetlab import clock
from kontor import datagen
from kontor.books.models import AgentRun, AgentStep, BatchJob, BulkUpload, Company, Document, ImportJob, Transaction

MODULES = ["lab2_swallowed_limit.imports", "lab2_swallowed_limit.uploads", "lab2_swallowed_limit.agent_runs"]
# How long after a task's hard limit a check still waits before it calls the task stuck, in wall seconds.
MARGIN = 1.5
POLL = 0.02


@dataclass(frozen=True)
class Kind:
    """One of the three subsystems: its task, its job table and the budgets the lab declares for it."""

    label: str
    task: str
    model: type[BatchJob]
    unit: str  # what the job counts, plural: "rows"
    item: str  # how an item is named in failures and latency keys: "row" -> "row 60", "row-60"
    soft: int  # production seconds, as declared in the lab's decorators
    hard: int

    def written(self, job: BatchJob) -> list[int]:
        """Return the numbers of the items this job wrote (import rows are counted, not numbered: all 0)."""
        if self.model is ImportJob:
            return [0] * Transaction.objects.filter(import_job=job).count()
        if self.model is BulkUpload:
            names = Document.objects.filter(bulk_upload=job).values_list("filename", flat=True)
            return sorted(int(re.search(r"\d+", name).group()) for name in names)
        return sorted(AgentStep.objects.filter(run=job).values_list("index", flat=True))


IMPORT = Kind("import job", "kontor.imports.import_csv", ImportJob, "rows", "row", 600, 900)
UPLOAD = Kind("bulk upload", "kontor.uploads.process_upload", BulkUpload, "files", "file", 600, 900)
AGENT = Kind("agent run", "kontor.agents.run_agent", AgentRun, "steps", "step", 300, 360)
KINDS = (IMPORT, UPLOAD, AGENT)


# One worker runs ten jobs at once. The three oversized ones each have one item
# whose model call outlasts any budget, so the soft limit always fires inside a
# model call, at a known item (the cut). The items before it take a fraction of
# the soft limit even on a busy machine; the items after it are more than the
# window up to the hard limit could finish. The seven jobs that fit are smaller
# than the cuts, so they never meet one.
CUT = {IMPORT: 60, UPLOAD: 15, AGENT: 12}
LATENCY = {IMPORT: 1.5, UPLOAD: 6.0, AGENT: 4.0}  # production seconds per model call
NEVER_ENDS = 100_000.0
# Broken items, also in the oversized jobs before their cuts, so "items written" differs from "items reached".
BAD_ROWS = (7, 23, 41, 300)
UNREADABLE_FILES = (12, 13)
UNANSWERED_STEPS = (9, 10)


@dataclass(frozen=True)
class Spec:
    """One job to run: its kind, its size and, for an import, its malformed rows."""

    kind: Kind
    size: int
    bad_rows: tuple[int, ...] = ()

    def bad_items(self) -> list[int]:
        """Return the numbers of the items that fail on their own (bad rows, unreadable files, unanswered steps)."""
        numbers = {IMPORT: self.bad_rows, UPLOAD: UNREADABLE_FILES, AGENT: UNANSWERED_STEPS}[self.kind]
        return sorted(n for n in numbers if n <= self.size)


OVERSIZED = (Spec(IMPORT, 1772, BAD_ROWS), Spec(UPLOAD, 95), Spec(AGENT, 100))
WITH_BAD_ITEMS = (Spec(IMPORT, 40, (3, 17, 18, 40)), Spec(IMPORT, 5, (1, 2, 3, 4, 5)), Spec(UPLOAD, 14),
                  Spec(AGENT, 11))
FITTING = (Spec(IMPORT, 50), Spec(UPLOAD, 10), Spec(AGENT, 8))


def latency_plan() -> dict:
    """Return the latency plan of the run, in production seconds."""
    keys = {}
    for kind, size in ((UPLOAD, 95), (AGENT, 100)):
        keys.update({f"{kind.item}-{n}": LATENCY[kind] for n in range(1, size + 1)})
    for kind in KINDS:
        keys[f"{kind.item}-{CUT[kind]}"] = NEVER_ENDS
    return {"seed": 7,
            "model": {"default": LATENCY[IMPORT], "keys": keys, "fail": [f"step-{n}" for n in UNANSWERED_STEPS]},
            "ocr": {"default": 0.03, "fail": [f"file-{n}" for n in UNREADABLE_FILES]}}


def csv_upload(rows: int, bad: tuple[int, ...]) -> str:
    """Return a bank export of `rows` rows whose 1-based rows in `bad` carry an impossible date."""
    text, _ = datagen.import_csv(7, rows, 0)
    lines = text.splitlines()
    for number in bad:
        lines[number] = "31.02.2026" + lines[number][len("2026-01-01"):]
    return "\n".join(lines) + "\n"


def create_job(spec: Spec) -> BatchJob:
    """Create a job as Kontor's web process would, before the task is sent."""
    company = Company.objects.order_by("id").first()
    if spec.kind is IMPORT:
        return ImportJob.objects.create(company=company, filename="export.csv",
                                        csv_text=csv_upload(spec.size, spec.bad_rows))
    if spec.kind is UPLOAD:
        return BulkUpload.objects.create(company=company, files=datagen.document_batch(7, spec.size))
    return AgentRun.objects.create(company=company, goal="Prepare the VAT return for the first quarter",
                                   steps=[f"Check booking {n} against its receipt" for n in range(1, spec.size + 1)])


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
    extra: dict = field(default_factory=dict)

    @property
    def kind(self) -> Kind:
        return self.spec.kind

    @property
    def name(self) -> str:
        return f"{self.kind.label} {self.job_id}"

    def failed_items(self) -> list[int]:
        return sorted(int(m.group()) for f in self.failures if (m := re.search(r"\d+", str(f.get("item", "")))))


def read_ending(spec: Spec, job: BatchJob, result) -> Ending:
    kind = spec.kind
    job.refresh_from_db()
    state = result.state
    value = result.result if result.ready() else None
    exception = type(value).__name__ if isinstance(value, BaseException) else ""
    return Ending(spec=spec, job_id=job.pk, status=job.status, running=kind.model.RUNNING, final=job.is_final,
                  message=job.message, items_total=job.items_total, failures=list(job.failures),
                  written=kind.written(job), state=state, exception=exception,
                  result_text=repr(value) if value is not None else "")


def wait_until(predicate, deadline: float) -> bool:
    """Poll `predicate` until it holds or the monotonic `deadline` passes; return whether it held."""
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL)


def hard_deadline(sent_at: float) -> float:
    """Return the wall time by which every task must have ended: the latest hard limit plus a margin."""
    return sent_at + max(clock.to_wall(kind.hard) for kind in KINDS) + MARGIN


COUNT = re.compile(r"(\d[\d,.]*)\s+of\s+(\d[\d,.]*)")


def counts_in(message: str) -> tuple[int, int] | None:
    """Return the (done, total) pair a message states, as in "timed out after 340 of 1,772 rows"."""
    match = COUNT.search(message)
    if not match:
        return None
    done, total = (int(re.sub(r"[,.]", "", group)) for group in match.groups())
    return done, total
