"""How the CLI shows things: the lab table, check lines and summaries, the stack table."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from budgetlab.labs import Lab

STATUS_STYLE = {"passed": "green", "failing": "red", "started": "yellow", "not started": "dim"}


def lab_table(labs: list[Lab], warn=lambda message: None, data: dict | None = None) -> Table:
    """The table `budgetlab list` prints; `data` stands in for the saved progress (the README shows a fresh checkout)."""
    from budgetlab.commands import progress

    data = progress.load(warn) if data is None else data
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("lab", "title", "status", "timebox", "hints"):
        table.add_column(column)
    for lab in labs:
        entry = progress.lab_entry(data, lab.number)
        status = entry["status"]
        table.add_row(str(lab.number), lab.title, Text(status, style=STATUS_STYLE.get(status, "")),
                      f"{lab.timebox} min", f"{min(entry['hints_used'], len(lab.hints))}/{len(lab.hints)}")
    return table


def check_line(result: dict) -> Text:
    if result["outcome"] == "passed":
        return Text.assemble(("  ✓ ", "green"), result["title"])
    return Text.assemble(("  ✗ ", "red"), result["title"], "\n      ", (result["symptom"], "yellow"))


# The line after a failed check's summary that names the workers' kept logs.
WORKER_LOGS = "what the workers logged (last lines): "


def verdict_line(output: str) -> str:
    """The summary line of what `check` printed: how many checks passed, or why it could not grade."""
    lines = [line.strip() for line in output.splitlines() if line.strip() and not line.strip().startswith(WORKER_LOGS)]
    return lines[-1] if lines else ""


# How the line that says a lab is graded once more on a slower clock begins (see grading_again).
GRADING_AGAIN = "grading again on one"


def grading_again(why: str, times: float, slower_times: float) -> Text:
    """The lines that say why a lab could not be graded on its clock and that it is graded once more on a slower one."""
    why = why.removeprefix("could not grade: ")
    return Text(f"could not grade on a clock {times:,.0f} times faster than production: {why}\n"
                f"{GRADING_AGAIN} {slower_times:,.0f} times faster", style="yellow")


def check_summary(outcome) -> Text:
    total = len(outcome.results)
    if outcome.could_not_grade and outcome.code_fault:
        # The code under check kept the checks from running: that is its verdict, said as the symptom.
        return Text(outcome.could_not_grade, style="bold red")
    if outcome.could_not_grade:
        return Text(f"could not grade: {outcome.could_not_grade.removeprefix('could not grade: ')}", style="bold red")
    if not total:
        return Text("could not grade: no checks ran", style="bold red")
    style = "bold green" if outcome.passed == total else "bold red"
    summary = Text(f"{outcome.passed} of {total} hidden checks passed", style=style)
    if outcome.worker_logs:
        summary.append(f"\n{WORKER_LOGS}{', '.join(outcome.worker_logs)}", style="dim")
    return summary


def stack_table(with_health: bool = False):
    """Per server: name, state, version, URL and PID on one line, never folded, so URLs can be copied.

    Below it, for a server the stack started: its program and where that came from.
    """
    from budgetlab import stack

    lines = Text()
    healthy = True
    for server in stack.servers().values():
        info = stack.describe(server)
        healthy = healthy and info["running"]
        state = ("external" if info["external"] else "running") if info["running"] else "stopped"
        name = "PostgreSQL" if info["kind"] == "postgres" else "Redis"
        lines.append(f"{name:<11}")
        lines.append(f"{state:<9}", style="green" if info["running"] else "red")
        lines.append(f"{info['version'] or '-':<8} {info['url'] or '-'}  PID {info['pid'] or '-'}\n")
        if info["program"]:
            lines.append(f"{'':<20} {info['program']}\n", style="dim")
    lines.rstrip()
    return (lines, healthy) if with_health else lines
