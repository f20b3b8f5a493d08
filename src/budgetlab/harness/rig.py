"""The one place that sets up real workers: a lab session's scratch database, Redis lease, workers and Celery client.

`budgetlab run`, the graders' fixtures, grader helpers and benchmarks all
open a Rig instead of wiring these pieces by hand:

    with Rig(target_dir, label="check") as rig:
        tree = rig.start_worker([queue := rig.queue()], ["lab3_reminder_sweep.sweeps"])
        rig.client.send_task("sweeps.reminders_send", queue=queue).get(timeout=30)
        with rig.django():
            ...  # this process's Django reads and writes the rig's database

Every piece is made on first use, so a rig that only needs a database
never leases a Redis database, and the other way round. Leaving the
block, by an exception or Ctrl-C included, kills the worker trees by
PID, closes the client, releases the lease, restores Django and drops
the database, in that order: no worker can still write to a database
that is being dropped. Ctrl-C and the graders' stall alarm are held
back while a piece is made or the rig is taken down, so neither can
leave a database or lease that nobody owns.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import signal
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from budgetlab.errors import BudgetlabError, StackShortage
from budgetlab.harness import database
from budgetlab.harness.workers import Environment, WorkerTree, celery_argv, environ_set, unique_hostname
from budgetlab.inworker import clock
from budgetlab.stack.leases import RedisLease

# Signals whose Python handlers raise (KeyboardInterrupt, the graders' CheckStalled): held back
# while the rig makes or frees a piece, delivered right after.
_DEFERRED = (signal.SIGINT, signal.SIGALRM)


class WorkerDidNotStart(BudgetlabError):
    """A worker tree gave no (or too few) "ready." lines; `tree` says which hosts did start and where its log is."""

    def __init__(self, message: str, tree: WorkerTree):
        super().__init__(message)
        self.tree = tree


class _Environment(Environment):
    """A worker's environment where an extra variable set to None is removed, not set."""

    def variables(self) -> dict[str, str]:
        env = super().variables()
        for name, value in self.extra.items():
            if value is None:
                env.pop(name, None)
        return env


class Rig:
    """A lab session's real servers and workers, made on first use and taken down together."""

    def __init__(self, target_dir: Path | str, label: str = "rig"):
        self.target_dir = Path(target_dir)
        self.label = label
        self._database_url: str | None = None
        self._lease: RedisLease | None = None
        self._client = None
        self._trees: list[WorkerTree] = []
        self._folder: Path | None = None
        self._closed = False

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # The pieces, each made on first use.

    @property
    def database_url(self) -> str:
        """A fresh, marked copy of the seeded template, dropped when the rig closes."""
        if self._database_url is None:
            self._require_open()
            with _held_signals(), _owed("a scratch copy of the seeded database"):
                self._database_url = database.scratch_database(self.label)
        return self._database_url

    @property
    def database_name(self) -> str:
        return self.database_url.rsplit("/", 1)[1]

    @property
    def broker_url(self) -> str:
        """A Redis database leased to this rig alone (broker and result backend), released when it closes."""
        if self._lease is None:
            self._require_open()
            with _held_signals(), _owed("a Redis database of its own"):
                self._lease = RedisLease()
        return self._lease.url

    @property
    def client(self):
        """A Celery app that sends tasks by name and reads their results, like Kontor's web process."""
        if self._client is None:
            broker = self.broker_url
            app = _production_time_celery()(self.label, broker=broker, backend=broker, set_as_current=False)
            # The workshop's wire format; results carry their task's name and worker.
            app.conf.update(task_serializer="json", result_serializer="json", accept_content=["json"],
                            result_extended=True)
            self._client = app
        return self._client

    def queue(self) -> str:
        """Return a fresh queue name, so that no worker of another run or check consumes from it."""
        return f"{self.label}-{uuid.uuid4().hex[:8]}"

    def folder(self) -> Path:
        """A scratch folder for logs and latency plans, removed when the rig closes."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix=f"budgetlab-{self.label}-"))
        return self._folder

    @contextlib.contextmanager
    def django(self) -> Iterator[str]:
        """Point this process's Django connection at the rig's database for the block; restore it after.

        Configures Django first when nothing in this process has. Yields
        the database's URL.
        """
        url = self.database_url
        configure_django(url)
        from django.db import connections

        connection = connections["default"]
        connection.close()
        previous = connection.settings_dict["NAME"]
        connection.settings_dict["NAME"] = self.database_name
        try:
            yield url
        finally:
            connection.close()
            connection.settings_dict["NAME"] = previous

    @contextlib.contextmanager
    def kontor_env(self) -> Iterator[str]:
        """Point KONTOR_DATABASE_URL in this process, and so in what it starts (a notebook kernel), at the rig's database."""
        with environ_set("KONTOR_DATABASE_URL", self.database_url):
            yield self.database_url

    def environment(self, modules: list[str] | tuple[str, ...] = (), settings_module: str | None = None,
                    latency_plan: dict | None = None, extra_env: dict | None = None) -> Environment:
        """Return the environment a worker (or a command of the lab, like a rescue script) runs in.

        An `extra_env` value of None removes that variable, so a grader's
        own shell cannot leak a setting into what is graded.
        """
        # Temporary files of the processes the rig starts live in its folder: a prefork master makes one
        # (billiard's shared heap, /tmp/pymp-*) that a tree killed by PID never removes; the folder goes with the rig.
        scratch = self.folder() / "tmp"
        scratch.mkdir(exist_ok=True)
        extra_env = {"TMPDIR": str(scratch), **(extra_env or {})}
        plan_path = None
        if latency_plan is not None:
            plan_path = self.folder() / f"plan-{uuid.uuid4().hex[:6]}.json"
            plan_path.write_text(json.dumps(latency_plan))
        return _Environment(target_dir=self.target_dir, database_url=self.database_url, broker_url=self.broker_url,
                            modules=list(modules), settings_module=settings_module, latency_plan=plan_path,
                            extra=dict(extra_env or {}))

    def start_worker(self, queues: list[str], modules: list[str], concurrency: int = 1, pool: str | None = None,
                     extra_args: list[str] | None = None, settings_module: str | None = None,
                     latency_plan: dict | None = None, extra_env: dict | None = None, argv: list[str] | None = None,
                     expect_ready: int = 1, cwd: Path | None = None, log: Path | None = None,
                     timeout: float | None = None, wait: bool = True) -> WorkerTree:
        """Start a real worker tree with the target's code and wait for its "ready." lines.

        `argv` replaces the `celery worker` command line (lab 1 starts the
        learner's entrypoint.sh, which prints `expect_ready` ready lines);
        `pool` adds `--pool`. A tree that does not start raises
        WorkerDidNotStart and is already stopped. Every tree is killed by
        PID when the rig closes; stop one earlier with `tree.stop(grace)`.
        With wait=False it returns once the tree is started: the caller
        does other work while the worker boots, then calls `ready(tree)`.
        """
        self._require_open()
        # A worker of one queue is that deployment's worker: a task its code sends without naming a queue
        # goes there, as it would go to the default queue every worker consumes in production.
        if len(queues) == 1:
            extra_env = {"KONTOR_DEFAULT_QUEUE": queues[0], **(extra_env or {})}
        env = self.environment(modules, settings_module, latency_plan, extra_env)
        if argv is None:
            argv = celery_argv(queues, unique_hostname(self.label), concurrency,
                               [*(["--pool", pool] if pool else []), *(extra_args or [])])
        log = log or self.folder() / f"worker-{len(self._trees)}.log"
        tree = WorkerTree(argv, env, log, expect_ready=expect_ready, cwd=cwd)
        self._trees.append(tree)
        tree.start(wait=False)
        return self.ready(tree, timeout) if wait else tree

    def ready(self, tree: WorkerTree, timeout: float | None = None) -> WorkerTree:
        """Wait for a tree `start_worker` started to be ready; raise WorkerDidNotStart (tree stopped) if it is not."""
        try:
            tree.finish_start(timeout=timeout or 30.0 + 15.0 * (tree.expect_ready - 1))
        except BudgetlabError as exc:
            raise WorkerDidNotStart(str(exc), tree) from None
        return tree

    # Taking it down.

    def close(self) -> None:
        """Kill the worker trees, close the client, release the lease, drop the database; idempotent."""
        if self._closed:
            return
        self._closed = True
        with _held_signals():
            _each([*(lambda tree=tree: tree.kill() for tree in reversed(self._trees)),
                   self._close_client, self._release_lease, self._drop_database, self._remove_folder])

    def _close_client(self) -> None:
        if self._client is not None:
            self._client.close()

    def _release_lease(self) -> None:
        if self._lease is not None:
            self._lease.release()

    def _drop_database(self) -> None:
        if self._database_url is None:
            return
        import sys

        if "django.db" in sys.modules:
            from django.db import connections

            # This process's own connections first; the drop would force them closed anyway.
            connections.close_all()
        database.drop(self.database_name)

    def _remove_folder(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def _require_open(self) -> None:
        if self._closed:
            raise BudgetlabError(f"the {self.label} rig is already closed")


def _each(steps: list[Callable[[], None]]) -> None:
    """Run every step even when one fails; raise the first failure afterwards."""
    failure: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:  # noqa: BLE001 - the remaining steps free servers others share
            failure = failure or exc
    if failure is not None:
        raise failure


@contextlib.contextmanager
def _owed(what: str) -> Iterator[None]:
    """Raise StackShortage, one line, when the stack cannot make a piece it owes the rig, whatever library failed."""
    try:
        yield
    except StackShortage:
        raise
    except Exception as exc:  # noqa: BLE001 - psycopg's, redis's and our own errors alike: none is the lab code's
        said = str(exc).strip().splitlines()
        raise StackShortage(f"the stack could not make {what}: {said[0] if said else type(exc).__name__}") from exc


@contextlib.contextmanager
def _held_signals() -> Iterator[None]:
    """Hold Ctrl-C and the stall alarm back for the block, and deliver them when it ends.

    Only the main thread can install handlers; elsewhere the block runs as is.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for number in _DEFERRED:
        handler = signal.getsignal(number)
        if callable(handler):
            previous[number] = signal.signal(number, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)


@functools.cache
def _production_time_celery() -> type:
    from celery import Celery  # on first use: importing Celery costs every CLI command otherwise

    class ProductionTimeCelery(Celery):
        """A client whose `countdown`, `eta` and `expires` count from production time, as the workers read it."""

        def now(self):
            return clock.production_datetime()

    return ProductionTimeCelery


def configure_django(url: str) -> None:
    """Set Django up in this process if nothing has yet, reading its settings with `url` as Kontor's database."""
    import django
    from django.apps import apps

    if apps.ready:
        return

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kontor.settings")
    # Set only while the settings are read: a worker this process starts gets its own.
    with environ_set("KONTOR_DATABASE_URL", url):
        django.setup()
    # This process writes Kontor's records as Kontor's web process would (a question, a job, an
    # upload), and a lab's worker reads their timestamps on the lab clock: a `created_at` in wall
    # time would make a deadline counted from "when it was asked" hundreds of seconds old at birth.
    from django.utils import timezone

    timezone.now = clock.production_datetime
