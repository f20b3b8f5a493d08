"""Lab 7's story: bulk uploads on acks_late workers, and how to force, watch and count a second delivery.

`budgetlab run 7` and the hidden graders share this module: the workload,
the lab's clock, how a redelivery is forced through kombu's own restore
path, and how a job's effects are counted (documents and letters in the
database, billed model calls in the stand-in's call log).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from budgetlab import labs
from budgetlab.stories.reading import Unmeasured, wait_until

SLUG = labs.slug_of(7)
TASK = "kontor.uploads.process_upload"
MODULES = [f"{SLUG}.uploads", f"{SLUG}.preflight"]
SETTINGS = f"{SLUG}.settings"
# The budgets and the broker default the lab is about, in production seconds.
HARD_LIMIT = 7200
DEFAULT_VISIBILITY_TIMEOUT = 3600
# Lab 7 waits for hour-long timeouts, so it runs on a faster clock than the other labs
# (5,000x: an hour is 0.72 wall seconds), unless BUDGETLAB_CLOCK says otherwise.
CLOCK = 0.0002
# `run 7` plays a whole 95-file upload, whose per-file database work the clock stretches too
# (at 5,000x a busy machine's 6 wall ms a file added 2,800 production seconds, close to the
# two-hour hard limit; at 2,000x a rehearsal's machine, loaded past its cores, still carried the
# reference solution's run past it): it runs at 1,000x, where the same work adds a fifth as much.
RUN_CLOCK = 0.001
# Polls twice as often as the other stories: at 5,000x, 10 wall ms are 50 production seconds.
POLL = 0.01
# Kombu's Redis keys for unacknowledged messages (the transport's defaults, no prefix).
UNACKED = "unacked"
UNACKED_INDEX = "unacked_index"


def lab_clock(factor: float = CLOCK):
    """Put this process (and the workers it starts) on lab 7's clock for the block, unless one was chosen."""
    from budgetlab.inworker import clock

    return clock.running_at(factor, unless_chosen=True)


def worker_clock() -> float:
    """The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on."""
    from budgetlab.inworker import clock

    return clock.read("BUDGETLAB_CLOCK", CLOCK)


def latency_plan(model_seconds: float) -> dict:
    """Return a latency plan where every model call takes `model_seconds` production seconds."""
    return {"seed": 7, "model": {"default": model_seconds}, "ocr": {"default": 0.03}}


def create_upload(files: int):
    """Create a bulk upload as Kontor's web process does before it sends the task."""
    from kontor import datagen
    from kontor.books.models import BulkUpload, Company

    company = Company.objects.order_by("id").first()
    return BulkUpload.objects.create(company=company, files=datagen.document_batch(7, files))


@dataclass
class Effects:
    """What one upload left behind: documents per file, letters, model calls per file, its row."""

    upload_id: int
    files: int
    status: str
    items_done: int
    documents: Counter  # filename -> rows
    letters: int
    model_calls: Counter  # "file-N" -> billed calls

    @property
    def duplicated_files(self) -> list[str]:
        return sorted(name for name, count in self.documents.items() if count > 1)

    @property
    def missing_files(self) -> int:
        return self.files - len(self.documents)

    @property
    def total_calls(self) -> int:
        return sum(self.model_calls.values())


def read_effects(upload_id: int, call_log: Path, calls_before: int = 0) -> Effects:
    """Count an upload's documents and letters in the database and its billed model calls in the call log.

    The call log names files, not uploads: the calls counted are those
    after the first `calls_before`, when this upload's runs were the only ones.
    """
    from kontor.books.models import BulkUpload, Document, Letter

    upload = BulkUpload.objects.get(pk=upload_id)
    names = {file["filename"] for file in upload.files}
    documents = Counter(Document.objects.filter(bulk_upload=upload).values_list("filename", flat=True))
    keys = {f"file-{n}" for n in range(1, len(upload.files) + 1)}
    return Effects(upload_id=upload_id, files=len(names), status=upload.status, items_done=upload.items_done,
                   documents=documents, letters=Letter.objects.filter(bulk_upload=upload).count(),
                   model_calls=Counter(key for key in calls(call_log)[calls_before:] if key in keys))


def calls(call_log: Path) -> list[str]:
    """Return the keys of the model calls in a call log, in order."""
    try:
        lines = call_log.read_text().splitlines()
    except OSError:
        return []
    return [line.split()[1] for line in lines if line.startswith("model ")]


def _task_id(message: dict) -> str:
    """The task id a kombu message carries in its headers ('' when none)."""
    return message.get("headers", {}).get("id", "")


def unacked(redis_client) -> dict[str, str]:
    """Return the broker's unacknowledged messages, delivery tag -> task id."""
    # Each is kept as [message, exchange, routing key].
    return {tag.decode(): _task_id(json.loads(raw)[0]) for tag, raw in redis_client.hgetall(UNACKED).items()}


def held_for(redis_client, queue: str) -> list[str]:
    """Return the task ids of the messages the broker still holds for `queue`: unacknowledged, or waiting in it.

    A copy kombu restored waits in the queue until a worker takes it. Both
    are read in one transaction, as kombu restores in one (kombu 5.7.0,
    `QoS.restore_by_tag`): a copy being restored is seen on one side.
    """
    with redis_client.pipeline(transaction=True) as pipe:
        pipe.hgetall(UNACKED)
        pipe.lrange(queue, 0, -1)
        held, waiting = pipe.execute()
    return [_task_id(json.loads(raw)[0]) for raw in held.values()] + [_task_id(json.loads(raw)) for raw in waiting]


def age_unacked(redis_client, task_id: str) -> int:
    """Make the task's unacknowledged message look years old; kombu's next sweep redelivers it.

    Only the score of kombu's own index changes: the worker's restore
    timer finds the message, takes it back and puts it on its queue,
    exactly as it does when the visibility timeout really runs out.
    """
    tags = [tag for tag, owner in unacked(redis_client).items() if owner == task_id]
    if tags:
        redis_client.zadd(UNACKED_INDEX, {tag: time.time() - 10 * 365 * 86400 for tag in tags})
    return len(tags)


_RECEIVED = "Task {task}[{id}] received"


def deliveries(logs: list[str], task_id: str) -> int:
    """Return how many times workers logged receiving the task's message, over all their logs."""
    return sum(text.count(_RECEIVED.format(task=TASK, id=task_id)) for text in logs)


def endings(logs: list[str], task_id: str) -> int:
    """Return how many runs of the task the workers logged as ended: returned, raised, retried, ignored, rejected.

    Every line Celery's tracer logs about a run, after the worker's `received`,
    is its ending (celery/app/trace.py, LOG_SUCCESS to LOG_RETRY). A run that
    retries has ended: its retry is a new message, and a delivery of its own.
    """
    pattern = re.compile(rf"Task {re.escape(TASK)}\[{re.escape(task_id)}\] (?!received)")
    return sum(len(pattern.findall(text)) for text in logs)


def wait_for(predicate, timeout: float) -> bool:
    """Wait on `predicate` for up to `timeout` wall seconds from now; return whether it held."""
    return wait_until(predicate, time.monotonic() + timeout, POLL)


# The day the graders replay, and `budgetlab run 7` shows: two workers on one queue.

# Wall seconds of slack for worker starts and a busy machine on top of any production wait.
SLACK = 5.0
# A killed job must be finished by another worker within this many production seconds:
# a visibility timeout a few hours above the longest budget does it, one of days does not.
TAKEOVER = 6 * 3600


@dataclass
class Outcome:
    """How one delivery plan went: the effects, how often the message came, and what the workers logged."""

    effects: Effects
    deliveries: int
    ended: bool  # the upload reached a final state
    runs_ended: int = 0  # deliveries whose run the workers logged as ended (returned, raised, retried, ...)
    first_alive_at_second: bool = False  # a second delivery arrived while the first run still worked
    ended_before_kill: bool = False  # the kill plan found no run still working to kill
    killed: bool = False  # a worker was killed mid-run
    deliveries_at_kill: int = 0  # deliveries that had come when the worker was killed
    calls_at_kill: tuple[str, ...] = ()  # the upload's model calls billed by then, in order ("file-N")
    note: str = ""

    @property
    def later_deliveries(self) -> int:
        """Deliveries that came after the kill."""
        return self.deliveries - self.deliveries_at_kill if self.killed else 0

    @property
    def still_running(self) -> int:
        """Deliveries whose run had not ended when the check looked (the killed run counts as ended)."""
        return max(0, self.deliveries - self.runs_ended - (1 if self.killed else 0))

    @property
    def calls_after_kill(self) -> Counter:
        return self.effects.model_calls - Counter(self.calls_at_kill) if self.killed else Counter()


class Day:
    """Two workers with the target's code on one queue, a shared call log, and the broker's Redis."""

    def __init__(self, rig, model_seconds: float, workers: int = 2):
        import redis

        _make_shared_pieces(rig)
        self.rig = rig
        self.queue = rig.queue()
        self.call_log = rig.folder() / "calls.log"
        self.redis = redis.Redis.from_url(rig.broker_url)
        plan = latency_plan(model_seconds)
        # Started side by side: a worker start is seconds of mostly waiting.
        waiters = [in_background(lambda: rig.start_worker([self.queue], MODULES, settings_module=SETTINGS,
                                                          latency_plan=plan,
                                                          extra_env={"KONTOR_CALL_LOG": str(self.call_log)}),
                                 _started)
                   for _ in range(workers)]
        self.workers = self.started = [wait() for wait in waiters]

    def logs(self) -> list[str]:
        """Return the log of every worker started, killed ones included."""
        return [tree.text() for tree in self.started]

    def send(self, upload_id: int, task_id: str | None = None) -> str:
        import uuid

        task_id = task_id or str(uuid.uuid4())
        self.rig.client.send_task(TASK, args=[upload_id], queue=self.queue, task_id=task_id)
        return task_id

    def settle(self, task_id: str, timeout: float, killed: int = 0) -> bool:
        """Wait until every delivery of the task has ended (or was killed) and none is pending; return whether it did.

        Pending is a copy the broker still holds: unacknowledged, or restored
        into the queue and not taken yet (a later plan would count its bills).
        """
        def settled():
            logs = self.logs()
            came = deliveries(logs, task_id)
            return (came > 0 and endings(logs, task_id) + killed >= came
                    and task_id not in held_for(self.redis, self.queue))
        return wait_for(settled, timeout)

    def finish_runs(self, task_id: str, came: int, timeout: float, killed: int = 0) -> bool:
        """Wait until the first `came` deliveries of the task have ended (or were killed); return whether they did.

        Later deliveries are not waited for: where the visibility timeout is
        no longer than a run, the broker hands the message out again during
        every run, and the task would never settle.
        """
        return wait_for(lambda: endings(self.logs(), task_id) + killed >= came, timeout)

    def outcome(self, upload_id: int, task_id: str, calls_before: int, **notes) -> Outcome:
        from kontor.books.models import BulkUpload

        effects = read_effects(upload_id, self.call_log, calls_before)
        logs = self.logs()
        return Outcome(effects=effects, deliveries=deliveries(logs, task_id), runs_ended=endings(logs, task_id),
                       ended=BulkUpload.objects.get(pk=upload_id).is_final, **notes)

    def run_once(self, files: int) -> Outcome:
        """One upload, one delivery."""
        upload, before = create_upload(files), len(calls(self.call_log))
        task_id = self.send(upload.pk)
        self.settle(task_id, run_wait())
        return self.outcome(upload.pk, task_id, before)

    def run_redelivered(self, files: int) -> Outcome:
        """One upload whose message kombu restores (forced through its own sweep) once the first run is halfway.

        Halfway, so that whatever keeps a second run out must still hold after
        half an hour of work (a claim that lapses sooner lets it in), with
        files left for the second delivery to arrive while the first run works.
        """
        upload, before = create_upload(files), len(calls(self.call_log))
        task_id = self.send(upload.pk)
        # acks_late=False acknowledges on receipt: then there is nothing the broker could redeliver.
        wait_for(lambda: task_id in unacked(self.redis).values() and self.billed(before) > files // 2
                   or endings(self.logs(), task_id), run_wait())
        forced = age_unacked(self.redis, task_id)
        alive = False
        if forced and wait_for(lambda: deliveries(self.logs(), task_id) >= 2, SLACK):
            alive = endings(self.logs(), task_id) == 0
        self.settle(task_id, 2 * run_wait())
        return self.outcome(upload.pk, task_id, before, first_alive_at_second=alive,
                            note="" if forced else "no unacknowledged message to redeliver")

    def run_raced(self, files: int) -> Outcome:
        """One message delivered twice at once to two idle workers, both let go at the same moment.

        The upload's row is locked while both deliveries start, so any run
        that writes to it waits; the lock goes once both runs wait on it or
        have ended, and they then race for the upload.
        """
        import psycopg

        upload, before = create_upload(files), len(calls(self.call_log))
        with psycopg.connect(self.rig.database_url) as locker, \
                psycopg.connect(self.rig.database_url, autocommit=True) as watcher:
            locker.execute("SELECT id FROM books_bulkupload WHERE id = %s FOR UPDATE", [upload.pk])
            holder = locker.info.backend_pid
            task_id = self.send(upload.pk)
            self.send(upload.pk, task_id)

            def waiting() -> int:
                # Runs waiting on the grader's row lock, or on each other (a lock a run takes itself).
                return watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                       "AND pid <> %s AND cardinality(pg_blocking_pids(pid)) > 0",
                                       [holder]).fetchone()[0]
            wait_for(lambda: waiting() + endings(self.logs(), task_id) >= 2, SLACK)
            locker.commit()
        self.settle(task_id, 2 * run_wait())
        return self.outcome(upload.pk, task_id, before)

    def billed(self, before: int) -> int:
        """Return the model calls billed since the first `before`: a run's progress that no transaction hides."""
        return len(calls(self.call_log)) - before

    def run_killed(self, files: int, kill_after: int) -> Outcome:
        """One upload whose worker is SIGKILLed (master and child) as its run asks the model about file kill_after + 1.

        The kill waits on billed calls, not on the upload's row, which a run
        inside one transaction never shows changing. When the run ends first,
        nothing is killed and the outcome says `ended_before_kill`: the
        upload's effects then tell why.
        """
        from kontor.books.models import BulkUpload

        upload, before = create_upload(files), len(calls(self.call_log))
        task_id = self.send(upload.pk)
        wait_for(lambda: self.billed(before) > kill_after or endings(self.logs(), task_id), run_wait())
        victim = next((tree for tree in self.workers if deliveries([tree.text()], task_id)), None)
        if victim is None or endings(self.logs(), task_id):
            return self.outcome(upload.pk, task_id, before, ended_before_kill=True)
        victim.kill()
        # Read after the kill: the killed run can bill no more, and no other worker has the message yet.
        came = deliveries(self.logs(), task_id)
        keys = {f"file-{n}" for n in range(1, files + 1)}
        billed = tuple(key for key in calls(self.call_log)[before:] if key in keys)
        self.workers = [tree for tree in self.workers if tree is not victim]
        from budgetlab.inworker import clock

        if wait_for(lambda: BulkUpload.objects.get(pk=upload.pk).is_final, clock.to_wall(TAKEOVER) + SLACK):
            # Taken over: the runs that had come by the time the upload ended may still book receipts.
            self.finish_runs(task_id, deliveries(self.logs(), task_id), run_wait(), killed=1)
        else:
            self.settle(task_id, run_wait(), killed=1)
        return self.outcome(upload.pk, task_id, before, killed=True, deliveries_at_kill=came, calls_at_kill=billed)


# What the checks say, built only from what a plan observed (tests/harness/test_lab7_symptoms.py reads each).

def _times(count: int, one: str = "once") -> str:
    return one if count == 1 else "twice" if count == 2 else f"{count} times"


def model_calls(count: int) -> str:
    return f"{count} model call{'' if count == 1 else 's'}"


def _receipts(effects: Effects) -> str:
    return f"{len(effects.documents)} of {effects.files} receipts stored"


def how_it_came(outcome: Outcome, plan: str) -> str:
    """Say how the plan's message came, as far as the workers' logs show: plan is once, redelivered, raced or killed."""
    if plan == "redelivered" and outcome.deliveries >= 2:
        return ("was handed out again while its first run still worked" if outcome.first_alive_at_second
                else "was handed out again")
    if plan == "raced" and outcome.deliveries >= 2:
        return "reached two idle workers at the same moment"
    if plan == "killed":
        return "came again after its worker was killed" if outcome.later_deliveries else "lost its worker mid-job"
    return "was sent once" if plan in ("once", "redelivered") else "was sent twice at once"


def the_upload(outcome: Outcome, plan: str) -> str:
    """Name a plan's upload by how its message came: "an upload whose message was sent once (delivered 1x)"."""
    return f"an upload whose message {how_it_came(outcome, plan)} (delivered {outcome.deliveries}x)"


def repeated(outcome: Outcome, plan: str) -> str:
    """Return what was repeated or lost, in a customer's words, or '' when every file counted once."""
    effects = outcome.effects
    problems = []
    if effects.duplicated_files:
        problems.append(f"{len(effects.duplicated_files)} of its {effects.files} receipts were booked more than "
                        f"once (e.g. {effects.duplicated_files[0]} {effects.documents[effects.duplicated_files[0]]}x)")
    # Two letters are a duplicate however far the runs got; none is a loss only once the job ended.
    if effects.letters > 1 or (effects.letters == 0 and outcome.ended):
        problems.append(f"the customer got {effects.letters} letters")
    if not problems:
        return ""
    return f"{the_upload(outcome, plan)}: " + ", ".join(problems)


def came_again_on_a_busy_machine(outcome: Outcome, planned: float, visibility_timeout: float) -> Unmeasured | None:
    """Say so when a message sent once came again although the upload's `planned` production seconds of model
    calls fit inside the broker's visibility timeout: only a run that a busy machine stretched past that timeout
    is handed out again then; None when it came once, or the timeout is shorter than the planned work."""
    if outcome.deliveries <= 1 or planned >= visibility_timeout:
        return None
    return Unmeasured(f"the broker handed the message out again, although the upload's {planned:,.0f} s of model "
                      f"calls fit inside its {visibility_timeout:,.0f} s visibility timeout: the run took longer than "
                      "that (is the machine very busy?)")


def where_it_stands(outcome: Outcome) -> str:
    """Say the upload's state as the check left it: ended, or still open and whether a run still worked on it."""
    status = outcome.effects.status
    if outcome.ended:
        return f"ended '{status}'"
    if outcome.still_running:
        return f"was still '{status}' with a run still working on it"
    return f"was still '{status}' after every run of it had ended"


def after_the_kill(outcome: Outcome) -> str:
    """Say what the deliveries after a kill did, as the logs and the call log show it."""
    later, billed = outcome.later_deliveries, sum(outcome.calls_after_kill.values())
    if not later:
        return "no delivery came after the kill"
    came = f"the message came {_times(later)} more after the kill"
    if outcome.still_running:
        return f"{came}, {outcome.still_running} of those runs still working, {model_calls(billed)} billed since"
    if not billed:
        return f"{came}, and each of those runs ended without billing a model call"
    return f"{came}; those runs billed {model_calls(billed)} and ended"


def killed_left_open(outcome: Outcome) -> str:
    """The killed plan's upload never reached a final state: how long, how far, and what came after the kill."""
    return (f"an upload whose worker was killed mid-job was still '{outcome.effects.status}' {TAKEOVER // 3600} "
            f"production hours later, with {_receipts(outcome.effects)}: {after_the_kill(outcome)}")


def rebilled(outcome: Outcome) -> list[str]:
    """Return the files billed before the kill, and finished then, that were billed again after it."""
    finished = set(outcome.calls_at_kill[:-1])  # the last was in flight when the worker died
    return sorted((key for key in outcome.calls_after_kill if key in finished), key=lambda key: int(key.split("-")[1]))


def billed_again(outcome: Outcome) -> str:
    """Say which files the runs after a kill billed again."""
    effects, again = outcome.effects, rebilled(outcome)
    said = (f": {', '.join(again)}, billed before the kill, {'was' if len(again) == 1 else 'were'} billed again "
            "after it") if again else ""
    return (f"an upload of {effects.files} files whose worker was killed mid-job billed "
            f"{model_calls(effects.total_calls)}{said}")


def ended_before_the_kill(outcome: Outcome) -> str:
    """The kill plan found no run to kill: the first run had ended, leaving the upload as it stands."""
    effects = outcome.effects
    return (f"an upload's first run ended after {model_calls(effects.total_calls)}, before its worker could be killed "
            f"mid-job, and left it '{effects.status}' with {_receipts(effects)}")


def _make_shared_pieces(rig) -> None:
    """Make the rig's database, lease and folder here, before worker starts in threads could each make their own."""
    rig.database_url, rig.broker_url, rig.folder()


def _started(tree, refused):
    if refused is not None:
        raise refused
    return tree


def run_wait() -> float:
    """Return how long one run may take at most, in wall seconds: its hard limit and some slack."""
    from budgetlab.inworker import clock

    return clock.to_wall(HARD_LIMIT) + SLACK


# The start-up check, tried with a budget, and with a retry countdown, above any sensible visibility timeout.

LONG_TASK = "kontor.reports.year_end_close"
LONG_LIMIT = 864_000  # ten days, in production seconds
RETRY_TASK = "kontor.reminders.send_payment_reminder"
RETRY_DELAY = 1_209_600  # fourteen days
_EXTRA_MODULES = {
    "budget": f'''"""A year-end report with a ten-day budget: a budget no visibility timeout should sit below."""

from kontor.celery_app import app


@app.task(name="{LONG_TASK}", time_limit={LONG_LIMIT})
def year_end_close() -> None:
    """Close the books of a year."""
''',
    "retry": f'''"""A payment reminder retried a fortnight later: a countdown no visibility timeout should sit below."""

from kontor.celery_app import app


@app.task(name="{RETRY_TASK}", time_limit=600, default_retry_delay={RETRY_DELAY}, bind=True)
def send_payment_reminder(self, invoice_id: int) -> None:
    """Remind a customer of an unpaid invoice; try again in two weeks if the mail server refuses."""
''',
}


@dataclass
class StartAttempt:
    """How a worker that loads one task with a ten-day budget fared: did it start, its exit status, its output."""

    started: bool
    returncode: int | None
    output: str


def start_with_long_budget(rig, kind: str = "budget", settings_module: str = SETTINGS):
    """Start, in the background, a worker that loads one more task; return a waiter for the attempt.

    The extra task has a ten-day hard limit (kind "budget") or a
    fourteen-day retry delay (kind "retry"); a deployment check should
    refuse to start such a worker. Calling the returned function waits
    and returns a StartAttempt; the rig kills the worker when it closes,
    whether it started or not.
    """
    _make_shared_pieces(rig)
    folder = rig.folder() / f"long-{kind}"
    folder.mkdir(exist_ok=True)
    module = f"lab7_long_{kind}"
    (folder / f"{module}.py").write_text(_EXTRA_MODULES[kind])
    path = os.pathsep.join([str(rig.target_dir), str(folder)])
    return in_background(lambda: rig.start_worker([rig.queue()], [*MODULES, module], settings_module=settings_module,
                                                  extra_env={"PYTHONPATH": path}, log=folder / "worker.log"),
                         _attempt)


def refused_how(attempt: StartAttempt) -> str:
    """Say how a worker that never became ready ended, when that ending is one a deployment cannot read as a refusal."""
    if attempt.returncode is None:
        return "the worker never became ready, and it had not exited either: a deployment sees no refusal"
    return f"the worker exited with status {attempt.returncode} before it was ready; a deployment reads that as success"


def _attempt(tree, refused) -> StartAttempt:
    if refused is not None:
        tree = refused.tree
    code = tree.proc.poll() if tree.proc is not None else None
    return StartAttempt(started=refused is None, returncode=code, output=tree.text())


def in_background(start, read):
    """Run `start` (a worker start, seconds of work) in a thread; return a function that waits and reads it.

    `read(tree, refused)` gets the started tree, or the WorkerDidNotStart
    the start raised.
    """
    import threading

    from budgetlab.harness.rig import WorkerDidNotStart

    box: dict = {}

    def run():
        try:
            box["tree"] = start()
        except WorkerDidNotStart as exc:
            box["refused"] = exc
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def wait():
        thread.join()
        if "error" in box:
            raise box["error"]
        return read(box.get("tree"), box.get("refused"))
    return wait


def configured_visibility_timeout(settings_module: str = SETTINGS) -> float:
    """Return the visibility timeout the target's settings configure, in production seconds."""
    import importlib

    settings = importlib.import_module(settings_module)
    options = getattr(settings, "broker_transport_options", None) or {}
    return options.get("visibility_timeout", DEFAULT_VISIBILITY_TIMEOUT)

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
# The timeline and counts follow the load: when the sweep ran, how far the first run got, how often the
# message came; the task id is new on every run.
_FOLLOWS_THE_LOAD = (
    (r"^ +[\d,]+  ", "T  "),
    (r"\b[0-9a-f]{8}\b", "ID"),
    (r"upload \d+ sent", "upload N sent"),
    (r"\(\d+ files counted", "(N files counted"),
    (r"│ +[\d,]+ │ measured", "│ T │ measured"),
    (r"\b\d+ (documents|booked|letter|model calls|letters|of its|run)", r"N \1"),
    # A busy machine stretches a run past its hard limit (a rehearsal's second run of the starter).
    (r"run ended: (succeeded|killed at its [\d,]+ s hard limit)$", "run ended: succeeded, or killed at its hard limit"),
    (r"delivered \d+x", "delivered Nx"),
    (r"\.txt \d+x", ".txt Nx"),
    # How many of the redeliveries had sent their letter when the check looked is a race.
    (r", the customer got \S+ letters", ""),
)
TRANSCRIPTS = {"check-starter": {"masks": _FOLLOWS_THE_LOAD}, "run": {"masks": _FOLLOWS_THE_LOAD}}
