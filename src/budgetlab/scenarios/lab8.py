"""`budgetlab run 8`: the afternoon the provider rate-limits, question by question and second by second at the provider.

The scenario plays lab 8's story (budgetlab.stories.lab8) with the
learner's code: one prefork worker, Kontor's web process, a real model
service called through the official openai client. It then waits a while
longer for retries still queued, so the ones that come minutes late show
up too. It prints each question's attempts (when each started, counted
from the question), how long the question took to end, how the month-end
review ended, and how many calls reached the provider in each stretch of
the afternoon. Everything is stopped and dropped at the end, Ctrl-C
included.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from budgetlab.errors import BudgetlabError
from budgetlab.harness.modelserver import ModelService
from budgetlab.harness.rig import Rig, WorkerDidNotStart
from budgetlab.harness.workers import unique_hostname
from budgetlab.stories import lab8

# How long the live view keeps the worker up after the afternoon for retries still queued, production seconds:
# past Celery's default retry delay, so retries that wait for it are seen arriving.
LINGER = 240.0
# One row of the provider's histogram covers this many production seconds.
BIN = 10.0

PHASES = {"healthy": f"the provider is healthy: the month-end review starts, {lab8.BEFORE} people ask",
          "limited": (f"the provider rate-limits ({lab8.LIMITED['rate']:g} calls a second, each answered in "
                      f"{lab8.LIMITED_LATENCY:g} s; 429 with Retry-After {lab8.LIMITED['retry_after']:g} s, some 503s): "
                      f"{lab8.DURING} people ask at once"),
          "eased": (f"{lab8.EASED:g} s after its first refusal the provider stops refusing, and still takes "
                    f"{lab8.LIMITED_LATENCY:g} s a call"),
          "recovered": f"the provider has recovered; {lab8.AFTER} more people ask",
          "busy": (f"the worker is busy with other work for a while, and the provider takes {lab8.LIMITED_LATENCY:g} s "
                   f"a call again: {lab8.QUEUED} more people ask")}


def play(target_dir: Path, console: Console) -> int:
    """Play the afternoon with the code in target_dir/lab8_questions; 0 when it ran."""
    scale = lab8.time_scale()
    console.print(f"Kontor's assistant and month-end review, as {target_dir.name}/{lab8.SLUG} retries them, "
                  "against a model service that rate-limits")
    console.print(Text(f"lab clock for this lab: 1 production second = {scale * 1000:g} ms wall "
                       f"({1 / scale:g}x faster); every time shown is in production seconds", style="dim"))

    def on_phase(phase: str) -> None:
        if phase in PHASES:
            console.print(Text(f"▸ {PHASES[phase]}", style="bold"))
        elif phase == "worker":
            console.print(f"worker ready: prefork, {lab8.CONCURRENCY} children")

    with Rig(target_dir, label="run8") as rig, rig.django():
        folder = rig.folder()
        with ModelService(folder, scale) as service:
            try:
                afternoon = lab8.play_afternoon(rig, service, rig.queue(), folder / "worker.log", on_phase,
                                                unique_hostname("run8"), linger=LINGER)
            except WorkerDidNotStart as exc:
                raise BudgetlabError(f"the worker did not start with the {target_dir.name} code: {exc}") from None
            except lab8.WebProcessEnded as exc:
                raise BudgetlabError(f"{exc}: {lab8.last_error(folder / 'web.log')}") from None
    _show_questions(console, afternoon)
    _show_review(console, afternoon)
    _show_provider(console, afternoon)
    return 0


def _outcome(question: lab8.Question) -> str:
    if question.took is None:
        return f"still {question.status}"
    if question.status == "failed" and lab8.TRY_AGAIN.search(question.message):
        return "try again"
    return question.status


def _show_questions(console: Console, afternoon: lab8.Afternoon) -> None:
    table = Table(box=None, pad_edge=False, header_style="bold", title_justify="left",
                  title=f"\nThe questions (promise: an answer or 'try again' within {lab8.PROMISE:g} s of asking)")
    for header in ("question", "phase", "attempts", "attempts started at (s after asking)", "ended", "after"):
        table.add_column(header, justify="left" if header in ("phase", "attempts started at (s after asking)",
                                                              "ended") else "right")
    for q in afternoon.questions:
        starts = " ".join(f"{c.at - q.asked:.0f}{'' if c.behaviour == 'ok' else '✗'}" for c in q.calls)
        took = "" if q.took is None else f"{q.took:.0f} s"
        style = "red" if q.took is None or q.took > lab8.PROMISE else None
        table.add_row(str(q.number), q.phase, str(len(q.calls)), starts, _outcome(q), Text(took, style=style or ""))
    console.print(table)
    console.print(Text("✗: the provider refused that attempt (429 or 503)", style="dim"))
    late = lab8.late_questions(afternoon.questions, allowance=0.0)
    console.print(f"questions that missed the promise: {len(late)} of {len(afternoon.questions)}")
    most, total, shortest, number = lab8.retries_in_step(afternoon)
    if total:
        console.print(f"retry number {number} after a 429: {total} questions; the most due within the same "
                      f"{lab8.STEP_WINDOW:g} s of waiting: {most} (from {shortest:.0f} s after the 429)")
    for problem in lab8.early_retries(afternoon)[:3]:
        console.print(Text(problem, style="red"))


def _show_review(console: Console, afternoon: lab8.Afternoon) -> None:
    review = afternoon.review
    console.print(Text("\nThe month-end review", style="bold"))
    console.print(f"ended '{review.status}': {review.message or '(no message)'}")
    for n in range(1, lab8.REVIEW_ITEMS + 1):
        calls = review.calls.get(n, [])
        marks = " ".join("ok" if c.behaviour == "ok" else "✗" for c in calls)
        fate = "answered" if review.answers.get(n) else ("recorded failed" if n in review.failures else "neither")
        extra = f" ({review.answers[n]} answers stored)" if review.answers.get(n, 0) > 1 else ""
        console.print(f"  item {n}: calls {marks or '-'}; {fate}{extra}")
    for problem in lab8.review_problems(afternoon):
        console.print(Text(problem, style="red"))


def _show_provider(console: Console, afternoon: lab8.Afternoon) -> None:
    calls = [c for c in afternoon.calls if c.at >= afternoon.limited_from]
    console.print(Text(f"\nCalls at the provider from the start of the rate limit, {BIN:g} s a row "
                       "(█ answered, ░ refused; 'peak': the most in any one second)", style="bold"))
    if not calls:
        console.print("no calls")
        return
    last = max(c.at for c in calls)
    row = 0
    while afternoon.limited_from + row * BIN <= last:
        start = afternoon.limited_from + row * BIN
        inside = [c for c in calls if start <= c.at < start + BIN]
        row += 1
        if not inside:
            continue
        ok = sum(c.behaviour == "ok" for c in inside)
        per_second: dict[int, int] = {}
        for c in inside:
            per_second[int(c.at)] = per_second.get(int(c.at), 0) + 1
        bar = "█" * ok + "░" * (len(inside) - ok)
        console.print(f"  {start - afternoon.limited_from:5.0f} s  {bar:<30.30} {len(inside):3d} calls, "
                      f"peak {max(per_second.values())}/s")
    kept = not lab8.late_questions(afternoon.questions, afternoon.lag_of) and not lab8.review_problems(afternoon)
    if kept:
        console.print(Text("Every question kept its promise and the review ended once. Next: budgetlab check 8",
                           style="bold green"))
    else:
        console.print(Text("From which moment does the person count, and from which does each retry?",
                           style="bold red"))
