"""Lab 8's story, shared by `budgetlab run 8` and its checks: an afternoon of questions while the provider rate-limits.

One prefork worker runs the target's assistant and month-end review
against a real model service, called through the official openai client.
Kontor's web process, a small process of its own on the lab clock, stores
each question and hands it to the target's `ask_question`, so the moment
a question is asked is production time, as the target's code reads it.

The afternoon: while the provider is healthy the review starts (one of
its items the provider fails every time) and a few people ask; then the
provider rate-limits, a token bucket that lets a few calls a minute
through, slowly, and twenty people ask at once; a while after its first
refusal it stops refusing but stays slow; then it recovers and a few more
ask. The service logs every call it receives, and the database every
status a question's row is given; after the afternoon the story reads
them, every question's row, and the messages still waiting in Redis.
Every time here is production seconds.
"""

from __future__ import annotations

import base64
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from budgetlab import labs
from budgetlab.harness import zygote
from budgetlab.harness.workers import FAST_FLAGS, unique_hostname
from budgetlab.inworker import clock
from budgetlab.stack import process
from budgetlab.stories.reading import Unmeasured, wait_until
from budgetlab.stories.stallmeter import StallMeter

SLUG = labs.slug_of(8)
MODULES = [f"{SLUG}.assistant", f"{SLUG}.review"]
# Loaded next to them in the worker, imported by the web process: notes each message the target's code sends.
NOTES = "budgetlab.inworker.published"
# Loaded next to them in the worker only: the other work that keeps its children busy (busy.hold).
BUSY_WORK = "budgetlab.inworker.busy"
QUESTION_TASK = "kontor.assistant.answer_question"
REVIEW_TASK = "kontor.assistant.review_month"
FINAL = ("succeeded", "failed")
TRY_AGAIN = re.compile(r"try\s+again", re.IGNORECASE)

# The promise, as the lab's docstring states it: from the question to its final state, all attempts together.
PROMISE = 60.0
# How far past the promise a final write may land and still count as kept: the last attempt's
# call and its database writes, on a busy machine whose milliseconds the lab clock stretches
# (5 production seconds are 0.2 s of wall time). The worker's measured lag is excused on top.
TOLERANCE = 5.0
# How far past the deadline an attempt may reach the provider and still count as started in time.
START_TOLERANCE = 2.0
# On a machine loaded far past its two cores, a worker may start a retry many production seconds
# after its ETA (a due message waits for a child, the child for a core). The checks measure that lag
# (Afternoon.lag) and excuse up to this much of it, in production seconds, on top of the tolerances.
MOST_LAG = 30.0
# A question that failed while the provider was healthy is the machine's when the worker, the web process or the model
# service waited for a core this long while it was open (see StallMeter): a quarter of the promise. A correct design may
# give up with a third of it left (the reference starts no attempt with less than its client's 20 s time-out), and the
# way from the question to an attempt runs through the web process, the worker's master and a child one after another,
# while the meter reads the most kept thread only. CI, 2026-12-06, beside other checks: a design that puts the deadline
# in the message's `expires` failed healthy questions whose message expired before a child took it.
STARVED = PROMISE / 4
# How much earlier than Retry-After asked a retry may be due (clock rounding between processes).
RETRY_AFTER_TOLERANCE = 0.5
# Retries "in step": of the questions' first (or second, ...) retries after a 429, more than four in
# five meant to start within the same two seconds after the refusal; a fixed wait puts all of them
# there. Eight or more retries spread at random bunch up like that in about 1 afternoon of 500 when
# spread over ten seconds, practically never over twenty (simulated, 20,000 draws each).
STEP_WINDOW = 2.0
STEP_SHARE = 0.8
# Fewer retries of one number than this say too little about a spread: five retries spread at random
# over ten seconds bunch up like that about once in 150 afternoons, eight about once in 500.
STEP_MINIMUM = 8
# While the provider rate-limits, at least this share of the questions it refuses with time left for
# a retry (Retry-After, then a call at the pace it answers, before the deadline) should be tried again in time.
# Low on purpose: a correct design whose waiting tasks hold their children meets its refusals late and, with
# its jitter, rightly gives up on most of them (one such run tried 3 of 15 again); giving up at once tries none.
RETRIED_SHARE = 0.1

# The provider: healthy calls take 2 s; rate-limited, it lets 0.05 calls a second through (3 at once),
# asks for 10 s in Retry-After, and answers one refusal in four with a 503.
LATENCY = 2.0
# A provider that rate-limits is busy: the calls it lets through take 18 s, within the client's 20 s.
# EASED production seconds after its first refusal it stops refusing, and is as slow. An attempt that starts
# in the last seconds before its question's deadline, with nothing bounding it by the time left,
# then ends well past the promise, as it would in production; an attempt refused at once could not show that.
LIMITED_LATENCY = 18.0
EASED = 35.0
LIMITED = {"rate": 0.05, "burst": 3, "retry_after": 10.0, "server_error_every": 4}
# Questions asked in each phase: healthy, rate-limited (all at once), recovered.
BEFORE, DURING, AFTER = 4, 20, 4
# Last, a busy worker: other work holds every child until WAITED production seconds after the last of
# QUEUED questions was asked, while the provider answers at its slow pace (LIMITED_LATENCY) again. The
# questions wait in the queue that long, and an attempt that starts then has too little of its promise left
# for a call at that pace: counted from the question, it says "try again" at once; counted from when a
# worker first took the question, it calls the provider and ends well past the promise.
QUEUED = 3
WAITED = 55.0
REVIEW_ITEMS = 6
# The review item the provider fails every time (its prompt names this marker).
FAILING_ITEM = 4
# What the provider fails every time, in every mode: that item's marker.
FAILING = [f"[r-1-{FAILING_ITEM}]"]
# How long the review may take before a check reads it, production seconds: it needs well under 120.
REVIEW_WAIT = 300.0
# Twelve children: the bucket's three slow calls hold three, and a design whose refused questions wait in
# their task holds more, while the twenty first attempts should reach the provider together even on a
# machine shared with other checks (with eight, such a design met fewer than eight 429s under load).
CONCURRENCY = 12
# The questions the worker's children answer before the afternoon, one each, are numbered from here (ungraded).
WARM_UP_FIRST = 100
# Lab 8 runs on a clock at most 25 times faster than production: every attempt is a real HTTP
# call, a database write and a Redis message, whose real milliseconds a faster clock would turn
# into whole seconds of a one-second window. BUDGETLAB_CLOCK=1 stays real time.
SLOWEST_SCALE = 0.04
MARKER = re.compile(r"\[(q|r)-(\d+)(?:-(\d+))?\]")


def time_scale() -> float:
    """Return the wall seconds per production second that lab 8's worker, service and checks run on."""
    return clock.at_most_as_fast_as(SLOWEST_SCALE)


def to_wall(production_seconds: float) -> float:
    return clock.to_wall(production_seconds, time_scale())


def worker_clock() -> float:
    """The clock of the `celery worker` masters the checks start, which budgetlab.harness.zygote starts on."""
    return time_scale()


# What the lab's code imports in its workers besides Celery, Django and the clients every worker imports:
# the check's zygote imports it too (budgetlab.harness.zygote).
WORKER_IMPORTS = ("openai",)


def to_production(wall_seconds: float) -> float:
    return clock.to_production(wall_seconds, time_scale())


def production_now() -> float:
    return clock.production_now(time_scale())


@dataclass
class Call:
    """One call the provider received: when (production timestamp), what it answered, and whose it was."""

    at: float
    behaviour: str  # ok, rate_limit, server_error
    retry_after: float | None
    key: str  # "q-12" for question 12, "r-1-4" for the review's item 4, "" when the prompt names neither


@dataclass
class Question:
    number: int
    phase: str
    run_id: int
    asked: float  # production timestamp the web process stored the question at
    status: str = "running"
    message: str = ""
    finished: float | None = None
    answers: int = 0
    calls: list = field(default_factory=list)
    # Each Celery retry message the target's code sent for this question: its ETA -> the moment it left
    # (production timestamps); empty for retries made inside a task.
    retries_sent: dict = field(default_factory=dict)
    # Every status written to the question's row, in order (the database's own record, see _STATUS_HISTORY).
    statuses: list = field(default_factory=list)
    # Production seconds the most kept thread of the worker, the web process or the model service waited for a core
    # while the question was open, to its end or its promise and tolerance (see StallMeter): what a busy machine
    # took from it; and the same from its deadline to its end (0 when it ended in time, or never), what a busy
    # machine made it late by.
    lost: float = 0.0
    lost_past_promise: float = 0.0

    @property
    def retries_queued(self) -> list[float]:
        """The ETAs of the question's Celery retry messages, in order."""
        return sorted(self.retries_sent)

    @property
    def reopened(self) -> str | None:
        """The final status the question had reached before an attempt of it wrote again; None if none did."""
        ended = next((i for i, status in enumerate(self.statuses) if status in FINAL), None)
        return self.statuses[ended] if ended is not None and ended < len(self.statuses) - 1 else None

    def scheduled(self, before: Call, after: Call) -> float:
        """Return when the retry after a refusal was meant to start.

        A retry sent through Celery carries its ETA, set by the worker when it
        was sent: that, not the moment a busy machine got it to the provider,
        is when it was meant to start. A retry made inside a task shows only
        its arrival at the provider.
        """
        return next((eta for eta in self.retries_queued if before.at <= eta <= after.at + RETRY_AFTER_TOLERANCE),
                    after.at)

    def retries(self) -> list[tuple[int, Call, float]]:
        """Return each retry as (its number, the call before it, when it was meant to start).

        Besides every call followed by another, a last call followed by a
        Celery retry still queued, or never run before the question ended,
        counts with that retry's ETA: the wait its code chose is the same
        whether or not a busy machine got the retry to the provider.
        """
        found = [(number, before, self.scheduled(before, after))
                 for number, (before, after) in enumerate(zip(self.calls, self.calls[1:]), start=1)]
        last = self.calls[-1] if self.calls else None
        waiting = [eta for eta in self.retries_queued if last is not None and eta > last.at]
        if waiting:
            found.append((len(self.calls), last, waiting[0]))
        return found

    @property
    def name(self) -> str:
        return f"question {self.number}"

    @property
    def deadline(self) -> float:
        return self.asked + PROMISE

    @property
    def took(self) -> float | None:
        return None if self.finished is None or self.status not in FINAL else self.finished - self.asked


@dataclass
class Review:
    run_id: int
    status: str = "running"
    message: str = ""
    answers: dict = field(default_factory=dict)  # item number -> answers stored
    failures: list = field(default_factory=list)  # item numbers recorded as failed, once per record
    calls: dict = field(default_factory=dict)  # item number -> its Calls


@dataclass
class Pending:
    """A message still waiting in Redis when the afternoon was read: which task, for which run, due when."""

    task: str
    run_id: int | None
    eta: float | None  # production timestamp; None: due at once
    expires: float | None

    @property
    def would_run(self) -> bool:
        return self.expires is None or self.eta is None or self.eta < self.expires


@dataclass
class Afternoon:
    questions: list = field(default_factory=list)
    review: Review | None = None
    calls: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    # Every question message with an ETA the target's code sent: (task id, retry number) -> (run id, ETA, sent at).
    queued: dict = field(default_factory=dict)
    # When the provider began to rate-limit, and when it first refused (its spell counts from there).
    limited_from: float = 0.0
    spell_started: float = 0.0

    def lag_of(self, q: Question) -> float:
        """The longest the worker took to get one of q's due Celery retries to the provider (production s, at most MOST_LAG).

        That time is the machine's: the retry was due, and the code had
        asked for it in time. Only retries due before the provider eased
        count: by the time the first of them is due, the provider lets a call
        through only every few seconds, so children are free; once it eases,
        its slow answers may hold every child, a backlog the code meets in
        production too and must not be excused. Each question is excused its
        own lag, not the afternoon's worst: one retry a loaded machine started
        late says nothing about when the others started.
        """
        eased = self.spell_started + EASED
        lags = [after.at - due for before, after in zip(q.calls, q.calls[1:])
                if (due := q.scheduled(before, after)) != after.at and due < eased]
        return min(max(lags, default=0.0), MOST_LAG)

    @property
    def lag(self) -> float:
        """The largest lag of any question (see lag_of), for the afternoon's record."""
        return max((self.lag_of(q) for q in self.questions), default=0.0)

    def phase(self, name: str) -> list[Question]:
        return [q for q in self.questions if q.phase == name]

    def retries(self) -> list[Call]:
        """Every call of a question after its first one."""
        return sorted((c for q in self.questions for c in q.calls[1:]), key=lambda c: c.at)


def _models():
    from kontor.books import models

    return models


# Every write of an agent run's status, in order, recorded by the database itself. A question that
# ended and was then run again (a retry still waiting when it ended) shows a final status followed by
# another write, even of the same status, whatever its row says at the end; no process of the lab's
# can miss recording it.
# The function writes with its owner's rights (the grader's role): Kontor's role may not touch the table.
_STATUS_HISTORY = """
CREATE TABLE public.budgetlab_lab8_status (id bigserial PRIMARY KEY, run_id bigint NOT NULL, status text NOT NULL);
CREATE FUNCTION public.budgetlab_lab8_status() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO public.budgetlab_lab8_status (run_id, status) VALUES (NEW.id, NEW.status);
    RETURN NEW;
END $$;
CREATE TRIGGER budgetlab_lab8_status AFTER UPDATE OF status ON {table} FOR EACH ROW
    EXECUTE FUNCTION public.budgetlab_lab8_status();
"""


def _record_statuses() -> None:
    """Have the rig's scratch database record every status write of an agent run."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(_STATUS_HISTORY.format(table=connection.ops.quote_name(_models().AgentRun._meta.db_table)))


def _statuses() -> dict[int, list[str]]:
    from django.db import connection

    found: dict[int, list[str]] = {}
    with connection.cursor() as cursor:
        cursor.execute("SELECT run_id, status FROM public.budgetlab_lab8_status ORDER BY id")
        for run_id, status in cursor.fetchall():
            found.setdefault(run_id, []).append(status)
    return found


def worker_argv(queue: str, hostname: str) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "kontor.celery_app", "worker", "-Q", queue, "-n", hostname,
            "-c", str(CONCURRENCY), "-l", "INFO", *FAST_FLAGS]


class WebProcessEnded(RuntimeError):
    """Kontor's web process ended early: the target's assistant module did not import, or ask_question raised."""


class WebProcess:
    """Kontor's web process on the lab clock: each line `N` it reads stores question N and calls ask_question."""

    def __init__(self, rig, queue: str, service, log):
        env = rig.environment(MODULES, extra_env={"KONTOR_MODEL_BASE_URL": service.base_url,
                                                  "BUDGETLAB_CLOCK": str(time_scale())}).variables()
        self.out = open(log, "ab")
        # Forked from the check's zygote, as the worker is: the web process imports as much.
        self.proc = zygote.start([sys.executable, "-m", "budgetlab.stories.lab8", "web", queue], env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.out, text=True)

    def ready(self, timeout: float = 30.0) -> None:
        self._read_line(timeout, "ready")

    def ask(self, numbers: list[int]) -> dict[int, int]:
        """Ask these questions at once; return each one's run id."""
        self.proc.stdin.write("".join(f"{n}\n" for n in numbers))
        self.proc.stdin.flush()
        return {n: int(self._read_line(10.0, "a question's id")) for n in numbers}

    def _read_line(self, timeout: float, what: str) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise WebProcessEnded(f"Kontor's web process ended before it sent {what}")
        return line.strip()

    def stop(self) -> None:
        process.end_child(self.proc, signal.SIGTERM, grace=2)
        self.out.close()


def last_error(log) -> str:
    """Return the last line of a traceback (or of anything) a process wrote to its log."""
    try:
        lines = [line for line in open(log, errors="replace").read().splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    return lines[-1].strip() if lines else "(the log is empty)"


def serve_web(queue: str) -> int:
    """The web process itself: store each question read from stdin, hand it to the target's ask_question."""
    import importlib

    import kontor.celery_app  # noqa: F401 - Django set up, Celery configured from Kontor's settings

    importlib.import_module(NOTES)

    kontor.celery_app.app.conf.task_default_queue = queue
    assistant = importlib.import_module(f"{SLUG}.assistant")
    m = _models()
    company = m.Company.objects.order_by("id").first()
    print("ready", flush=True)
    for line in sys.stdin:
        number = int(line)
        run = m.AgentRun.objects.create(company=company, steps=["Answer the customer"],
                                        goal=f"Why was invoice {1000 + number} charged twice? [q-{number}]")
        assistant.ask_question(run.pk)
        print(run.pk, flush=True)
    return 0


def _calls(service) -> list[Call]:
    scale = time_scale()
    found = []
    for raw in service.calls():
        match = MARKER.search(raw["prompt"])
        key = "" if not match else "-".join(filter(None, match.groups()))
        found.append(Call(at=clock.production_time(raw["wall"], scale), behaviour=raw["behaviour"],
                          retry_after=raw["retry_after"], key=key))
    return found


def _timestamp(value) -> float | None:
    if value in (None, ""):
        return None
    import datetime

    if isinstance(value, (int, float)):
        return float(value)
    moment = datetime.datetime.fromisoformat(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def pending_messages(broker_url: str, queue: str) -> list[Pending]:
    """Every task message still in Redis: queued, or held by the worker until its ETA (kombu's unacked hash)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    try:
        messages = _messages(client, queue)
    finally:
        client.close()
    return [Pending(task=m["headers"].get("task", "?"), run_id=_run_id(m), eta=_timestamp(m["headers"].get("eta")),
                    expires=_timestamp(m["headers"].get("expires"))) for m in messages]


def _messages(client, queue: str) -> list[dict]:
    """Every task message in Redis now: queued, or held by a worker until its ETA (kombu's unacked hash)."""
    found = []
    for item in [*client.lrange(queue, 0, -1), *client.hvals("unacked")]:
        try:
            message = json.loads(item)
            if isinstance(message, list):  # the unacked hash keeps [message, exchange, routing key]
                message = message[0]
            body = message["body"]
            if (message.get("properties") or {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args, kwargs, _ = json.loads(body)
            found.append({"headers": message.get("headers") or {}, "args": args, "kwargs": kwargs})
        except (ValueError, KeyError, TypeError, IndexError):
            continue
    return found


def _run_id(message: dict) -> int | None:
    ids = [v for v in [*message["args"], *message["kwargs"].values()] if isinstance(v, int) and not isinstance(v, bool)]
    return ids[0] if ids else None


class SentRetries:
    """Every question message with an ETA the target's code sent, as its sender noted it (see NOTES)."""

    def __init__(self, broker_url: str):
        import redis

        self.client = redis.Redis.from_url(broker_url, socket_timeout=None)
        self.seen: dict[tuple, tuple] = {}
        self.read = 0

    def update(self) -> dict[tuple, tuple]:
        """Read the notes sent since the last look; return (task id, retry number) -> (run id, ETA, sent at)."""
        from budgetlab.inworker.published import KEY

        for raw in self.client.lrange(KEY, self.read, -1):
            self.read += 1
            note = json.loads(raw)
            eta = _timestamp(note.get("eta"))
            if eta is None or note.get("task") != QUESTION_TASK:
                continue
            run_id = _run_id({"args": note.get("args") or [], "kwargs": note.get("kwargs") or {}})
            self.seen.setdefault((note.get("id"), note.get("retries")), (run_id, eta, float(note["at"])))
        return self.seen

    def close(self) -> dict[tuple, tuple]:
        try:
            self.update()
        finally:
            self.client.close()
        return dict(self.seen)


def _decided(questions: list[Question], sent: SentRetries) -> bool:
    """Whether every question has ended, or is past its promise and every lag this story would excuse.

    A question whose last Celery retry was due before its deadline may end
    up to MOST_LAG later on a busy machine; any other is read once its
    promise and the tolerance are over.
    """
    final = set(_models().AgentRun.objects.filter(pk__in=[q.run_id for q in questions], status__in=FINAL)
                .values_list("pk", flat=True))
    now = production_now()
    due_in_time = {run_id for run_id, eta, _ in sent.update().values()
                   for q in questions if q.run_id == run_id and eta <= q.deadline}
    return all(q.run_id in final or now > q.deadline + TOLERANCE + 1 + (MOST_LAG if q.run_id in due_in_time else 0)
               for q in questions)


class _Easing(threading.Thread):
    """Tell `on_phase` "eased" once the provider's spell is over; it ends on its own, EASED after its first refusal."""

    def __init__(self, service, on_phase: Callable[[str], None]):
        super().__init__(daemon=True)
        self.service, self.on_phase, self.done = service, on_phase, threading.Event()
        self.start()

    def run(self) -> None:
        # A tenth of a second is precise enough for the live view, and keeps the service's graded calls unhurried.
        while not self.done.wait(0.1):
            if self.service.stats()["eased"]:
                self.on_phase("eased")
                return

    def stop(self) -> None:
        self.done.set()
        self.join()


def play_afternoon(rig, service, queue: str, log, on_phase: Callable[[str], None] = lambda phase: None,
                   hostname: str | None = None, linger: float = 0.0) -> Afternoon:
    """Start the worker and the web process with the target's code and play the afternoon.

    `rig.django()` must be active. `on_phase` hears "worker", "healthy",
    "limited", "eased" (from another thread), "recovered", "busy" and "done".
    `linger` production seconds more are given to retries still waiting
    (the live view shows them; checks read the waiting messages instead).
    Raises WorkerDidNotStart when the target's code does not start.
    """
    with StallMeter() as meter:
        return _play(rig, service, queue, log, on_phase, hostname, linger, meter)


def _play(rig, service, queue: str, log, on_phase: Callable[[str], None], hostname: str | None, linger: float,
          meter: StallMeter) -> Afternoon:
    m = _models()
    _record_statuses()
    service.set_mode("healthy", latency=LATENCY, failing=FAILING)
    web = WebProcess(rig, queue, service, rig.folder() / "web.log")
    try:
        tree = rig.start_worker([queue], [*MODULES, NOTES, BUSY_WORK], log=log,
                                argv=worker_argv(queue, hostname or unique_hostname(rig.label)),
                                extra_env={"KONTOR_MODEL_BASE_URL": service.base_url,
                                           "BUDGETLAB_CLOCK": str(time_scale())})
        # The web process and the model service serve each question too: their waits for a core are its waits.
        meter.watch(lambda: tree.pids() | {web.proc.pid, service.proc.pid})
        web.ready()
        sent = SentRetries(rig.broker_url)
        on_phase("worker")
        afternoon = Afternoon()

        def ask(first: int, count: int, phase: str, then: Callable[[list[Question]], None] = lambda asked: None
                ) -> list[Question]:
            ids = web.ask(list(range(first, first + count)))
            asked = dict(m.AgentRun.objects.filter(pk__in=ids.values()).values_list("pk", "created_at"))
            questions = [Question(n, phase, ids[n], asked[ids[n]].timestamp()) for n in ids]
            then(questions)
            wait_until(lambda: _decided(questions, sent), time.monotonic() + 3 * to_wall(PROMISE + TOLERANCE) + 5)
            return questions

        # Every child answers one question first, ungraded: a fresh prefork child's first task pays for its
        # start-up (its own database and HTTP connections), real milliseconds that this clock makes seconds.
        # Cold, a rehearsal's healthy questions reached the provider 8 to 11 s after they were asked (the
        # recovered ones, on warm children, 2 to 3 s), and the twenty asked at once reached it over 42 s: no
        # rush, on a worker that production would have kept warm.
        ask(WARM_UP_FIRST, CONCURRENCY, "warm-up")
        review = m.AgentRun.objects.create(company=m.Company.objects.order_by("id").first(), goal="the month of March",
                                           steps=[f"Explain open item {n} [r-1-{n}]" for n in range(1, REVIEW_ITEMS + 1)])
        rig.client.send_task(REVIEW_TASK, args=[review.pk], queue=queue)
        on_phase("healthy")
        afternoon.questions += ask(1, BEFORE, "healthy")
        afternoon.limited_from = production_now()
        service.set_mode("limited", latency=LIMITED_LATENCY, failing=FAILING, eases_after=EASED, **LIMITED)
        easing = _Easing(service, on_phase)
        on_phase("limited")
        try:
            afternoon.questions += ask(BEFORE + 1, DURING, "limited")
        finally:
            easing.stop()
        first_refusal = service.stats()["first_refusal"]
        # The spell runs from the provider's first refusal (see modelserver's `eases_after`).
        afternoon.spell_started = (clock.production_time(first_refusal, time_scale()) if first_refusal is not None
                                   else afternoon.limited_from)
        service.set_mode("healthy", latency=LATENCY, failing=FAILING)
        on_phase("recovered")
        afternoon.questions += ask(BEFORE + DURING + 1, AFTER, "recovered")
        wait_until(lambda: m.AgentRun.objects.filter(pk=review.pk, status__in=FINAL).exists(),
                   time.monotonic() + to_wall(REVIEW_WAIT))
        service.set_mode("healthy", latency=LIMITED_LATENCY, failing=FAILING)
        with _Holds(rig, queue) as holds:
            on_phase("busy")
            afternoon.questions += ask(BEFORE + DURING + AFTER + 1, QUEUED, "busy",
                                       then=lambda asked: holds.end_at(max(q.asked for q in asked) + WAITED))
        service.set_mode("healthy", latency=LATENCY, failing=FAILING)
        if linger:
            ids = {q.run_id for q in afternoon.questions} | {review.pk}
            wait_until(lambda: not any(p.would_run and p.run_id in ids
                                       for p in pending_messages(rig.broker_url, queue)),
                       time.monotonic() + to_wall(linger))
            wait_until(lambda: service.stats()["open"] == 0, time.monotonic() + to_wall(2 * LIMITED_LATENCY) + 1)
        afternoon.queued = sent.close()
        afternoon.pending = pending_messages(rig.broker_url, queue)
        afternoon.calls = _calls(service)
        _read(afternoon, review)
        for q in afternoon.questions:
            q.lost = _lost(meter, q.asked, q.asked + (q.took if q.took is not None else PROMISE + TOLERANCE))
            if q.took is not None and q.took > PROMISE:
                q.lost_past_promise = _lost(meter, q.deadline, q.asked + q.took)
        on_phase("done")
        return afternoon
    finally:
        if "sent" in locals():
            sent.client.close()
        web.stop()


def _lost(meter: StallMeter, since: float, until: float) -> float:
    """Production seconds the meter's most kept thread waited for a core between two production timestamps."""
    return to_production(meter.lost(clock.wall_time(since, time_scale()), clock.wall_time(until, time_scale())))


class _Holds:
    """Other work on every child of the worker (budgetlab.inworker.busy), from entering until the moment `end_at` names."""

    def __init__(self, rig, queue: str):
        from budgetlab.inworker import busy

        self.busy, self.rig, self.queue = busy, rig, queue
        self.named = False

    def __enter__(self) -> _Holds:
        import redis

        self.notes = redis.Redis.from_url(self.rig.broker_url)
        for _ in range(CONCURRENCY):
            self.rig.client.send_task(self.busy.TASK, queue=self.queue)
        # Every child takes one: by now the review has ended (or had all of REVIEW_WAIT), and the questions too.
        wait_until(lambda: int(self.notes.get(self.busy.STARTED_KEY) or 0) >= CONCURRENCY,
                   time.monotonic() + to_wall(WAITED))
        return self

    def end_at(self, moment: float) -> None:
        """Let every hold end at production timestamp `moment`, on the worker's clock."""
        self.notes.rpush(self.busy.RELEASE_KEY, *[repr(moment)] * CONCURRENCY)
        self.named = True

    def __exit__(self, *exc_info) -> None:
        try:
            if not self.named:  # the phase ended early: the holds end now
                self.end_at(0.0)
        finally:
            self.notes.close()


def _read(afternoon: Afternoon, review_row) -> None:
    m = _models()
    by_key: dict[str, list[Call]] = {}
    for call in afternoon.calls:
        by_key.setdefault(call.key, []).append(call)
    rows = {r.pk: r for r in m.AgentRun.objects.filter(pk__in=[q.run_id for q in afternoon.questions])}
    statuses = _statuses()
    answers = dict(m.AgentStep.objects.filter(run_id__in=rows).values_list("run_id").annotate(
        n=__import__("django.db.models", fromlist=["Count"]).Count("id")))
    for q in afternoon.questions:
        row = rows[q.run_id]
        q.status, q.message = row.status, row.message
        q.finished = row.finished_at.timestamp() if row.finished_at else None
        q.answers = answers.get(q.run_id, 0)
        q.calls = sorted(by_key.get(f"q-{q.number}", []), key=lambda c: c.at)
        q.retries_sent = {eta: at for run_id, eta, at in afternoon.queued.values() if run_id == q.run_id}
        q.statuses = statuses.get(q.run_id, [])
    review_row.refresh_from_db()
    review = Review(run_id=review_row.pk, status=review_row.status, message=review_row.message)
    for index in m.AgentStep.objects.filter(run=review_row).values_list("index", flat=True):
        review.answers[index] = review.answers.get(index, 0) + 1
    for failure in review_row.failures:
        found = re.search(r"\d+", str(failure.get("item", "")))
        if found:
            review.failures.append(int(found.group()))
    for n in range(1, REVIEW_ITEMS + 1):
        review.calls[n] = sorted(by_key.get(f"r-1-{n}", []), key=lambda c: c.at)
    afternoon.review = review


# What the checks and the live view say about an afternoon, each a list of symptoms (empty: kept).

def _calls_text(count: int) -> str:
    return f"{count} call{'' if count == 1 else 's'}"


def rush_missing(afternoon: Afternoon) -> str | None:
    """Say why the afternoon cannot be graded when the rate limit met no rush; None when it did.

    The checks about refusals need questions refused together, early
    enough that a retry fits: at least STEP_MINIMUM of the twenty must meet
    a 429 on their first call with Retry-After, a call at the provider's
    slow pace and START_TOLERANCE still left before their deadline, or
    whether their retries come back in step cannot be told (a retry
    policy that keeps the promise rightly gives up on later refusals). On
    a machine loaded far past its cores the worker may send the twenty
    first calls so far apart, in production seconds, that the bucket
    refills between them and most come too late.
    """
    asked = afternoon.phase("limited")
    early = PROMISE - LIMITED["retry_after"] - LIMITED_LATENCY - START_TOLERANCE
    refused = [q for q in asked
               if q.calls and q.calls[0].behaviour == "rate_limit" and q.calls[0].at - q.asked <= early]
    if len(refused) >= STEP_MINIMUM:
        return None
    first = sorted(q.calls[0].at for q in asked if q.calls)
    spread = f"over {first[-1] - first[0]:.0f} s" if len(first) > 1 else "hardly at all"
    return (f"the provider answered only {len(refused)} of the {len(asked)} questions asked at once with a 429 on "
            f"their first call within {early:g} s of the question: {len(first)} of them reached it {spread}, so the "
            "rush never came (is the machine very busy?)")


def record(afternoon: Afternoon) -> str:
    """Return what the afternoon's checks rest on, a line a question: kept beside the check's logs, pass or fail.

    A check that passes a wrong fix leaves no worker log; this record shows
    which event the afternoon never produced (a rush, retries in step, a
    retry near a deadline, a chain of refusals past one).
    """
    lines = [f"lag {afternoon.lag:.1f} s; provider limited from {afternoon.limited_from:.1f}, first refusal "
             f"{afternoon.spell_started:.1f} (production timestamps); rush: {rush_missing(afternoon) or 'came'}",
             f"in step (most, of, from, retry number): {retries_in_step(afternoon)}",
             f"retry waits from the refusal: {_rounded(retry_delays(afternoon))}",
             f"retry waits as chosen: {_rounded(retry_delays(afternoon, chosen=True))}"]
    for q in afternoon.questions:
        calls = " ".join(f"{c.at - q.asked:.1f}:{c.behaviour}" for c in q.calls)
        queued = " ".join(f"{eta - q.asked:.1f}" for eta in q.retries_queued)
        took = f"{q.took:.1f}" if q.took is not None else "-"
        lines.append(f"{q.name} ({q.phase}) {q.status} after {took} s; calls {calls or '-'}; retries due "
                     f"{queued or '-'}; waited for a core {q.lost:.1f} s, past the deadline "
                     f"{q.lost_past_promise:.1f} s")
    return "\n".join(lines) + "\n"


def _rounded(delays: dict[int, list[float]]) -> dict[int, list[float]]:
    return {number: [round(d, 1) for d in found] for number, found in delays.items()}


def late_questions(questions: list[Question], lag: Callable[[Question], float] = lambda q: 0.0,
                   allowance: float = TOLERANCE, measured: bool = False) -> list[str]:
    """Questions that missed the promise.

    The checks excuse each question's `lag`, the machine's own delay
    (Afternoon.lag_of), and `allowance`, the last write's time on a busy
    machine; and, `measured`, they take a question that ended late by no
    more than its worker waited for a core past its deadline for the
    machine's (Unmeasured). The live view excuses nothing and shows the
    promise as the person counts it.
    """
    problems = []
    for q in questions:
        if q.took is None:
            problems.append(f"{q.name} was still '{q.status}' {PROMISE + TOLERANCE:g} s after it was "
                            f"asked ({_calls_text(len(q.calls))} to the provider so far)")
        elif (over := q.took - PROMISE - allowance - lag(q)) > 0:
            symptom = f"{q.name} ended '{q.status}' {q.took:.0f} s after it was asked; its promise is {PROMISE:g} s"
            if measured and over <= q.lost_past_promise:
                symptom = Unmeasured(f"{symptom}, but Kontor's worker, its web process or the model service "
                                     f"waited {q.lost_past_promise:.0f} s for a core past its deadline (is the "
                                     "machine very busy?)")
            problems.append(symptom)
        elif q.status == "failed" and not TRY_AGAIN.search(q.message):
            problems.append(f"{q.name} failed with '{q.message}', which does not tell the person to try again")
        elif q.status == "succeeded" and q.answers != 1:
            problems.append(f"{q.name} ended 'succeeded' with {q.answers} answers stored")
    return problems


def unless_starved(q: Question, symptom: str) -> str:
    """Return the symptom of a question that failed while the provider was healthy; the machine's (Unmeasured)
    when Kontor's worker, its web process or the model service waited for a core STARVED or longer while it was
    open."""
    if q.lost >= STARVED:
        return Unmeasured(f"{symptom}, but Kontor's worker, its web process or the model service waited {q.lost:.0f} s "
                          "for a core while it was open (is the machine very busy?)")
    return symptom


def refused_and_retried(questions: list[Question]) -> tuple[list[Question], list[Question]]:
    """Return the questions refused early enough to be retried in time, and those of them that were.

    Early enough: a retry after Retry-After, answered at the pace the
    provider answers while it rate-limits, would still end within the
    promise. A refusal later than that is rightly answered with "try
    again" (a task that holds its child while it waits meets its refusals
    late). A question counts as retried when a retry reached the provider
    in time, or when a Celery retry of it was due by its deadline: a
    machine loaded far past its cores may start that retry too late to
    call the provider, which is no fault of the code that asked for it.
    """
    leave = LIMITED["retry_after"] + LIMITED_LATENCY
    refused = [q for q in questions
               if any(c.behaviour != "ok" and c.at + leave <= q.deadline for c in q.calls)]
    retried = [q for q in refused
               if any(before.behaviour != "ok" and after.at <= q.deadline + START_TOLERANCE + MOST_LAG
                      for before, after in zip(q.calls, q.calls[1:]))
               or any(eta <= q.deadline for eta in q.retries_queued)]
    return refused, retried


def late_attempts(afternoon: Afternoon) -> list[str]:
    """Attempts that reached the provider after their question's deadline, and retries still queued past it."""
    problems = []
    for q in afternoon.questions:
        late = [c for c in q.calls if c.at > q.deadline + START_TOLERANCE + afternoon.lag_of(q)]
        if late:
            problems.append(f"{q.name} reached the provider {late[0].at - q.asked:.0f} s after it was asked "
                            f"(its promise is {PROMISE:g} s)")
        elif q.reopened:
            problems.append(f"{q.name} had ended '{q.reopened}', then an attempt of it ran again: a retry of "
                            "it was still waiting when it ended")
    by_run = {q.run_id: q for q in afternoon.questions}
    for message in afternoon.pending:
        q = by_run.get(message.run_id)
        if q is not None and message.task == QUESTION_TASK and message.would_run:
            due = (message.eta if message.eta is not None else production_now()) - q.asked
            if due > PROMISE + START_TOLERANCE:
                state = f"had ended '{q.status}'" if q.status in FINAL else f"was still '{q.status}'"
                problems.append(f"{q.name} {state}, and another attempt of it was queued to run {due:.0f} s "
                                "after it was asked")
    return problems


def early_retries(afternoon: Afternoon) -> list[str]:
    """Retries meant to start sooner than the 429 before them asked in Retry-After."""
    problems = []
    for q in afternoon.questions:
        for _, before, start in q.retries():
            if before.retry_after and start - before.at < before.retry_after - RETRY_AFTER_TOLERANCE:
                problems.append(f"{q.name}'s retry was due {start - before.at:.1f} s after a 429 that asked "
                                f"for {before.retry_after:g} s (Retry-After)")
                break
    return problems


def retry_delays(afternoon: Afternoon, chosen: bool = False) -> dict[int, list[float]]:
    """Return, for each retry number (1: a question's first retry), how long each retry after a 429 waited.

    The wait ends at a Celery retry's ETA, else at the retry's arrival at the provider. A retry
    still waiting in Redis when the afternoon ended counts with its ETA: a wait longer than the
    afternoon is a wait all the same, and the ones that come back in step are the point.
    With `chosen`, a Celery retry's wait is the one its code chose, from the moment it sent the
    message: a busy machine's delay between the refusal and the send cannot spread that one.
    """
    delays: dict[int, list[float]] = {}
    for number, from_send, from_refusal in _waits_after_a_429(afternoon):
        delays.setdefault(number, []).append(from_send if chosen else from_refusal)
    return {number: sorted(found) for number, found in delays.items()}


def _waits_after_a_429(afternoon: Afternoon) -> Iterator[tuple[int, float, float]]:
    """Yield each retry after a 429 as (its number, its wait from the moment its message left, from the refusal).

    A retry with no note of its message (made inside a task) waited from the refusal either way.
    """
    for q in afternoon.questions:
        for number, before, start in q.retries():
            if before.behaviour == "rate_limit":
                yield number, start - q.retries_sent.get(start, before.at), start - before.at


def retries_in_step(afternoon: Afternoon) -> tuple[int, int, float, int]:
    """Return the tightest bunch of retries: how many came back within one STEP_WINDOW of delay, of how many, from when, which retry.

    Questions refused together and retried after the same delay reach the
    provider together again: the provider sees the burst it refused come
    back. Measured on the delays, one retry number at a time (every first
    retry, every second one, ...), rather than on the provider's clock, so
    that the worker's own pace on a busy machine, which spreads the first
    burst, cannot hide retries that are in step; and measured twice, from
    the refusal and as the code chose it, so that neither a wait counted
    from the refusal nor one counted from a late send hides behind the other.
    """
    worst = (0, 0, 0.0, 0)
    for chosen in (False, True):
        for number, delays in retry_delays(afternoon, chosen).items():
            most, shortest, start = 0, 0.0, 0
            for end, delay in enumerate(delays):
                while delay - delays[start] > STEP_WINDOW:
                    start += 1
                if end - start + 1 > most:
                    most, shortest = end - start + 1, delays[start]
            if len(delays) >= STEP_MINIMUM and most / len(delays) > (worst[0] / worst[1] if worst[1] else 0):
                worst = (most, len(delays), shortest, number)
    return worst


def retry_wait_bounds(afternoon: Afternoon) -> dict[int, list[tuple[float, float]]]:
    """Return, for each retry number, the bounds of each retry-after-a-429's wait as its code chose it.

    The wait a Celery retry's code chose lies between the two readings of
    retry_delays: no longer than from the refusal (the worker met the 429
    later, on a busy machine), no shorter than from the moment its message
    left (the code chose the wait before it sent the message).
    """
    bounds: dict[int, list[tuple[float, float]]] = {}
    for number, *readings in _waits_after_a_429(afternoon):
        bounds.setdefault(number, []).append((min(readings), max(readings)))
    return bounds


def could_be_in_step(afternoon: Afternoon) -> Unmeasured | None:
    """Say so when the waits' bounds leave room for more than STEP_SHARE of one retry number's retries (at least
    STEP_MINIMUM) to have been chosen within one STEP_WINDOW; None when they do not.

    Retries that in_step finds spread out may still have been in step: a
    busy machine that delays a child between a 429 and its next send
    spreads both readings of the same fixed wait (a rehearsal's doubling
    without jitter, chosen 10 s each, read 7.0 to 12.8 s). Then the
    check cannot tell, and says so instead of passing the code.
    """
    for number, found in sorted(retry_wait_bounds(afternoon).items()):
        if len(found) < STEP_MINIMUM:
            continue
        most = max(sum(1 for low, high in found if low <= start + STEP_WINDOW and high >= start)
                   for start in [low for low, _ in found] + [high - STEP_WINDOW for _, high in found])
        if most > STEP_SHARE * len(found):
            return Unmeasured(f"the questions' {_ordinal(number)} retries after a 429 spread out as read, but a busy "
                              f"machine delayed the worker between the refusals and the sends so much that {most} of "
                              f"{len(found)} of them may have been chosen within the same {STEP_WINDOW:g} seconds (is "
                              "the machine very busy?)")
    return None


def _ordinal(number: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(number, f"{number}th")


def in_step(afternoon: Afternoon) -> str | None:
    """Describe retries that came back in step; None when they spread out."""
    most, total, shortest, number = retries_in_step(afternoon)
    if total and most > STEP_SHARE * total:
        return (f"{most} of {total} questions' {_ordinal(number)} retries after a 429 waited between "
                f"{shortest:.0f} and {shortest + STEP_WINDOW:.0f} s: questions the provider refused together came "
                "back together, and were refused together again")
    return None


def review_problems(afternoon: Afternoon) -> list[str]:
    review = afternoon.review
    problems = []
    if review.status not in FINAL:
        problems.append(f"the review was still '{review.status}' {REVIEW_WAIT:g} s after it started")
    for n in range(1, REVIEW_ITEMS + 1):
        answered, failed = review.answers.get(n, 0), review.failures.count(n)
        calls = review.calls.get(n, [])
        if answered > 1:
            problems.append(f"the review stored {answered} answers for item {n}")
        elif answered and failed:
            problems.append(f"item {n} was answered and also recorded as failed")
        elif failed > 1:
            problems.append(f"item {n} was recorded as failed {failed} times")
        elif review.status in FINAL and not answered and not failed:
            problems.append(f"item {n} was neither answered nor recorded as failed when the review ended")
        first_ok = next((c.at for c in calls if c.behaviour == "ok"), None)
        if first_ok is not None and any(c.at > first_ok for c in calls):
            problems.append(f"item {n} was asked again after the model had answered it")
    tries = len(review.calls.get(FAILING_ITEM, []))
    if FAILING_ITEM in review.failures and tries < 2:
        problems.append(f"item {FAILING_ITEM} was recorded as failed after {tries} call: the provider's 503 "
                        "was never tried again")
    reruns = [p for p in afternoon.pending if p.task == REVIEW_TASK and p.run_id == review.run_id and p.would_run]
    if reruns and review.status in FINAL:
        due = reruns[0].eta
        # Read after the afternoon: on a busy machine its moment may have passed already.
        ahead = due - production_now() if due else None
        when = ("" if ahead is None else f" due {ahead:.0f} s later" if ahead >= 0
                else f" already due {-ahead:.0f} s before the check read it")
        problems.append(f"the review had ended '{review.status}', yet a message to run it again was still "
                        f"queued{when}")
    return problems

# What this lab's transcripts blank before a fresh run is compared with them (see scripts/transcripts.py).
TRANSCRIPTS = {
    # Which questions the rate limit refuses, when their retries are due, and so which of the starter's faults
    # each check meets and names first, follow the worker's pace: only which checks fail is stable (a rehearsal's
    # busy afternoon met a retry that ran after its question had ended, and a review still running, first).
    # What each check saw is read, sentence by sentence, by the tests in tests/harness; a check that could not
    # grade stays visible, for the transcript test to run the check again.
    "check-starter": {"masks": ((r"^ {6}(?!could not grade)\S.*$", "      (what the check saw)"),)},
}


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "web":
    sys.exit(serve_web(sys.argv[2]))
