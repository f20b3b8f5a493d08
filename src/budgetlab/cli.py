"""The `budgetlab` command: the learner's loop (list, run, check, hint, ...) and the stack."""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.table import Table

from budgetlab.errors import BudgetlabError

app = typer.Typer(help="A workshop on budgets, endings and isolation for Celery batches.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
stack_app = typer.Typer(help="Start, stop and describe the PostgreSQL and Redis servers.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")
console = Console(highlight=False)


@stack_app.command("up")
def stack_up() -> None:
    """Start the servers (if needed) and prepare the workshop database."""
    from budgetlab import stack
    from budgetlab.database import prepare

    stack.up()
    prepare()
    _print_status()


@stack_app.command("down")
def stack_down() -> None:
    """Stop the servers the stack started, by PID."""
    from budgetlab import stack

    stopped = stack.down()
    console.print("stopped " + ", ".join(stopped) if stopped else "nothing to stop: the stack started no server that still runs")


@stack_app.command("status")
def stack_status() -> None:
    """Show each server's version, URL and PID."""
    if not _print_status():
        raise typer.Exit(1)


def _print_status() -> bool:
    from budgetlab import stack

    table = Table(box=None, pad_edge=False)
    for column in ("server", "state", "version", "url", "pid"):
        table.add_column(column)
    healthy = True
    for server in stack.servers().values():
        info = stack.describe(server)
        healthy &= info["running"]
        state = ("external" if info["external"] else "running") if info["running"] else "stopped"
        name = "PostgreSQL" if info["kind"] == "postgres" else "Redis"
        table.add_row(name, state, info["version"] or "-", info["url"] or "-", str(info["pid"] or "-"))
    console.print(table)
    return healthy


def main() -> None:
    """Run the CLI; a problem a person can act on becomes one line on stderr and exit 2."""
    try:
        app()
    except BudgetlabError as exc:
        Console(stderr=True, highlight=False).print(f"[bold red]error:[/] {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        Console(stderr=True).print("interrupted")
        sys.exit(130)
