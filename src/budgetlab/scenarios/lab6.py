"""`budgetlab run 6`: the assistant's afternoon on the learner's worker, the limits inspect reports beside what happened.

The scenario plays lab 6's story (budgetlab.stories.lab6) with the
learner's code: one worker with the lab's own settings, a real model
service called through the official openai client, a review and three
rounds of questions while the provider is healthy, hangs, recovers and
hangs again. A sampler watches the calls the provider holds open (the
worker's threads that wait on it) and the messages waiting in the queue.
It ends with the budgets `celery inspect` reports next to how long the
runs really took. Everything is stopped and dropped at the end, Ctrl-C
included.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab.errors import BudgetlabError
from budgetlab.harness.modelserver import ModelService
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.harness.workers import unique_hostname
from budgetlab.stories import lab6

PHASES = {"healthy": "the provider is healthy: the review starts, five people ask",
          "slow": "the provider hangs: calls stall, 429s, 503s; twelve people ask",
          "recovered": "the provider has recovered; twelve more people ask",
          "relapse": "the provider hangs again, until the review's budget is spent"}


class Sampler(threading.Thread):
    """Every few wall milliseconds, the calls the provider holds open and the messages still queued."""

    def __init__(self, service: ModelService, broker_url: str, queue: str):
        super().__init__(daemon=True)
        import redis

        self.service, self.queue = service, queue
        self.redis = redis.Redis.from_url(broker_url)
        self.stop_event = threading.Event()
        self.phase = "worker"
        self.peaks: dict[str, tuple[int, int]] = {}

    def run(self) -> None:
        while not self.stop_event.wait(0.02):
            try:
                held, queued = self.service.stats()["open"], int(self.redis.llen(self.queue))
            except Exception:  # the service or Redis is going away with the run; the peaks so far stand
                return
            old = self.peaks.get(self.phase, (0, 0))
            self.peaks[self.phase] = (max(old[0], held), max(old[1], queued))

    def stop(self) -> None:
        self.stop_event.set()
        self.join(2)
        self.redis.close()


def play(target_dir: Path, console: Console) -> int:
    """Play the afternoon with the code in target_dir/lab6_assistant; 0 when it ran."""
    scale = lab6.time_scale()
    console.print("Kontor's assistant and month-end review on the agent worker, as "
                  f"{target_dir.name}/{lab6.SLUG}/settings.py starts it, against a model service that has a slow "
                  "afternoon")
    console.print(Text(f"lab clock for this lab: 1 production second = {scale * 1000:g} ms wall "
                       f"({1 / scale:g}x faster); every time shown is in production seconds", style="dim"))
    with Rig(target_dir, label="run6") as rig, rig.django():
        folder = rig.folder()
        with ModelService(folder, scale) as service:
            queue, hostname = rig.queue(), unique_hostname("run6")
            sampler = Sampler(service, rig.broker_url, queue)
            declared: dict[str, str] = {}

            def on_phase(phase: str) -> None:
                if sampler.phase in PHASES:
                    held, queued = sampler.peaks.get(sampler.phase, (0, 0))
                    console.print(f"  threads waiting on the model: up to {held}; questions queued: up to {queued}")
                if phase == "worker":
                    _show_worker(console, rig, hostname, declared)
                    sampler.start()
                elif phase in PHASES:
                    console.print(Text(f"\n▸ {PHASES[phase]}", style="bold"))
                sampler.phase = phase

            try:
                afternoon = lab6.play_afternoon(rig, service, queue, folder / "worker.log", on_phase, hostname)
            except WorkerDidNotStart as exc:
                raise BudgetlabError(f"the worker did not start with the {target_dir.name} code: {exc}") from None
            finally:
                if sampler.is_alive():
                    sampler.stop()
            log_lines = (folder / "worker.log").read_text(errors="replace").splitlines()
    _show_rounds(console, afternoon, sampler.peaks)
    _show_budgets(console, afternoon, log_lines, declared)
    return 0


def _show_worker(console: Console, rig: Rig, hostname: str, declared: dict) -> None:
    """Print what `celery inspect` says about the worker: its pool, its threads and its tasks' limits."""
    inspect = rig.client.control.inspect(destination=[hostname], timeout=2.0)
    stats = (inspect.stats() or {}).get(hostname, {})
    registered = (inspect.registered("soft_time_limit", "time_limit") or {}).get(hostname, [])
    pool = stats.get("pool", {})
    console.print(f"\ncelery inspect stats: pool {pool.get('implementation', '?')}, "
                  f"max-concurrency {pool.get('max-concurrency', '?')}")
    for line in sorted(registered):
        console.print(Text(f"celery inspect registered: {line}"))  # Text: the brackets are not markup
        name, _, limits = line.partition(" [")
        found = dict(re.findall(r"(\w+)=([\d.]+)", limits))
        declared[name.rsplit(".", 1)[-1]] = ", ".join(f"{label} {found[key]} s" for key, label in
                                                      (("soft_time_limit", "soft"), ("time_limit", "hard"))
                                                      if key in found) or "none"


def _outcome(ending: lab6.Ending, promise: float) -> str:
    if ending.seconds is None:
        return "still running" if ending.waited is not None else "never started"
    if ending.status == "failed" and lab6.TRY_AGAIN.search(ending.message):
        return "failed: try again"
    return ending.status


def _show_rounds(console: Console, afternoon: lab6.Afternoon, peaks: dict) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left",
                  title="\nThe questions, round by round (promise: an answer or 'try again' within 45 s)")
    for header in ("round", "asked", "answered", "try again", "unfinished", "longest", "held calls", "queued"):
        table.add_column(header, justify="left" if header == "round" else "right")
    for phase, endings in (("healthy", afternoon.before), ("slow", afternoon.during), ("recovered", afternoon.after)):
        outcomes = [_outcome(e, lab6.PROMISE) for e in endings]
        finished = [e.seconds for e in endings if e.seconds is not None]
        unfinished = sum(o in ("still running", "never started") for o in outcomes)
        longest = f">{lab6.PROMISE + lab6.TOLERANCE:g} s" if unfinished else f"{max(finished, default=0):.0f} s"
        held, queued = peaks.get(phase, (0, 0))
        table.add_row(phase, str(len(endings)), str(outcomes.count("succeeded")),
                      str(outcomes.count("failed: try again")), str(unfinished), longest, str(held), str(queued))
    console.print(table)
    console.print(Text("held calls: the most calls the provider held open for the worker at once (each one a "
                       "thread waiting); queued: the most questions waiting in Redis at once", style="dim"))
    console.print(f"after the slow spell's questions were over, the worker still held "
                  f"{afternoon.held_after_spell} calls open that nobody was waiting for")


def _show_budgets(console: Console, afternoon: lab6.Afternoon, log_lines: list[str], declared: dict) -> None:
    """Print each task's declared budget beside how long its runs really took."""
    questions = [*afternoon.before, *afternoon.during, *afternoon.after]
    unfinished = sum(e.seconds is None for e in questions)
    longest = max((e.seconds for e in questions if e.seconds is not None), default=0.0)
    review = afternoon.review
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left",
                  title="\nThe budgets inspect reports, and what happened")
    for header in ("task", "declared (inspect registered)", "what happened"):
        table.add_column(header)
    table.add_row("answer_question", declared.get("answer_question", "?"),
                  f"longest finished run {longest:.0f} s" + (f"; {unfinished} runs still going at "
                                                            f"{lab6.PROMISE + lab6.TOLERANCE:g} s" if unfinished else ""))
    review_text = (f"still '{review.status}' at {lab6.REVIEW_BUDGET + lab6.REVIEW_TOLERANCE:g} s, "
                   f"{review.items_done} of {review.steps_total} steps" if review.seconds is None
                   else f"ended '{review.status}' after {review.seconds:.0f} s: {review.message}")
    table.add_row("review_month", declared.get("review_month", "?"), review_text)
    console.print(table)
    limit_lines = [line for line in log_lines if "time limit" in line.lower() and "exceeded" in line]
    console.print(f"time-limit lines in the worker log: {len(limit_lines)}")
    kept = unfinished == 0 and review.seconds is not None
    if kept:
        console.print(Text("Every run ended within its budget. Next: budgetlab check 6", style="bold green"))
    else:
        console.print(Text("Runs outlived the limits the worker reports. Which pool applies them, and who chose "
                           "the client's timeout?", style="bold red"))
