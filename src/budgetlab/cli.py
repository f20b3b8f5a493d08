"""The `budgetlab` command: the learner's loop (list, run, check, hint, ...) and the stack."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from budgetlab.errors import BudgetlabError

app = typer.Typer(help="A workshop on budgets, endings and isolation for Celery batches that call a model.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
stack_app = typer.Typer(help="Start, stop and describe the PostgreSQL and Redis servers.", no_args_is_help=True)
app.add_typer(stack_app, name="stack")
console = Console(highlight=False, soft_wrap=True)
errors = Console(stderr=True, highlight=False, soft_wrap=True)


class ReportFormat(str, Enum):
    md = "md"
    json = "json"
    csv = "csv"


class AuditFormat(str, Enum):
    full = "full"
    concise = "concise"
    json = "json"
    sarif = "sarif"
    github = "github"
    text = "text"


def _warn(message: str) -> None:
    errors.print(f"[yellow]warning:[/] {message}")


def _say_what_moved(entry, where) -> None:
    """Tell a learner once that their tree still holds a lab under the folder name it had before."""
    from budgetlab.commands import progress

    if where.is_learners and (moved := where.moved(entry)):
        progress.note_once(f"moved:{entry.number}:{entry.slug}", moved, _warn)


@app.command("list")
def list_labs() -> None:
    """List the labs with their status and timebox."""
    from budgetlab import labs
    from budgetlab.commands import views

    console.print(views.lab_table(labs.load(), _warn))


@app.command("run")
def play(lab: int = typer.Argument(..., help="Lab number, as budgetlab list shows it."),
        target: str = typer.Option("labs", help="Whose code plays: labs (yours), solutions, or a folder laid out like labs/.")) -> None:
    """Play lab N's scenario live on the stack with your current code, or another target's."""
    from budgetlab import labs, scenarios, stack, targets
    from budgetlab.commands import progress
    from budgetlab.harness import database

    entry = labs.get(lab)
    where = targets.resolve(target)
    where.lab_folder(entry)
    _say_what_moved(entry, where)
    stack.require()
    database.require_current()
    # Watching the reference fix play is not an attempt at the lab.
    if where.is_learners:
        progress.mark_started(entry.number, _warn)
    raise typer.Exit(scenarios.play(entry, where.root, console))


@app.command("check")
def check(lab: int = typer.Argument(..., help="Lab number, as budgetlab list shows it."),
          target: str = typer.Option("labs", help="What to grade: labs (your code), solutions, or a folder laid out like labs/."),
          fail_fast: bool = typer.Option(False, "--fail-fast", "-x", help="Stop at the first failed check.")) -> None:
    """Run lab N's hidden checks and say which pass."""
    from budgetlab import labs, paths, targets
    from budgetlab.board import client as room_board
    from budgetlab.commands import checking, progress

    entry = labs.get(lab)
    where = targets.resolve(target)
    where.lab_folder(entry)
    _say_what_moved(entry, where)
    console.print(f"checking lab {entry.number} ({entry.title}) against {paths.display_path(where.root)}/ …")
    outcome = checking.grade_aloud(entry, where, console, fail_fast=fail_fast)
    if where.is_learners:
        progress.record_check(entry.number, outcome, _warn)
    room_board.post_check(entry.number, outcome, where, _warn)
    raise typer.Exit(outcome.exit_code)


@app.command("hint")
def hint(lab: int = typer.Argument(..., help="Lab number, as budgetlab list shows it.")) -> None:
    """Show the next hint for lab N (hints are remembered)."""
    from budgetlab import labs
    from budgetlab.commands import progress

    entry = labs.get(lab)
    seen = progress.record_hint(entry.number, _warn)
    shown = min(seen, len(entry.hints))
    console.print(f"[bold]hint {shown} of {len(entry.hints)}[/] for lab {entry.number}: {entry.hints[shown - 1]}")
    if seen > len(entry.hints):
        console.print("that was the last hint; 'budgetlab solution N' shows the reference once the lab passes")


@app.command("watch")
def watch(lab: Optional[int] = typer.Argument(None, help="Lab number; default: the first lab not passed yet."),
          poll: bool = typer.Option(False, help="Poll for changes instead of waiting for file events.")) -> None:
    """Re-run lab N's checks every time you save one of its files."""
    from budgetlab.commands import watching

    raise typer.Exit(watching.watch(lab, poll, console))


@app.command("reset")
def reset(lab: Optional[int] = typer.Argument(None, help="Lab number to restore."),
          all_labs: bool = typer.Option(False, "--all", help="Restore every lab."),
          yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation (for scripts).")) -> None:
    """Restore a lab's starter files; yours go to a timestamped backup first."""
    from budgetlab import labs
    from budgetlab.commands import files

    if (lab is None) == (not all_labs):
        raise BudgetlabError("name one lab number or --all")
    chosen = labs.load() if all_labs else [labs.get(lab)]
    names = ", ".join(str(entry.number) for entry in chosen)
    if not yes and not typer.confirm(f"Restore the starter files of lab {names}? Your files are backed up first."):
        console.print("nothing changed")
        raise typer.Exit(1)
    for entry in chosen:
        backup = files.reset(entry)
        console.print(f"lab {entry.number}: starter files restored" + (f"; your files are in {backup}" if backup else ""))


@app.command("solution")
def solution(lab: int = typer.Argument(..., help="Lab number, as budgetlab list shows it."),
             force: bool = typer.Option(False, "--force", help="Show it before the lab has passed (asks first)."),
             yes: bool = typer.Option(False, "--yes", help="With --force: do not ask for confirmation.")) -> None:
    """Show the diff from your files to the reference solution (after the lab passes)."""
    from budgetlab import labs
    from budgetlab.commands import files, progress

    entry = labs.get(lab)
    passed = progress.lab_entry(progress.load(_warn), entry.number)["passed"]
    if not passed:
        if not force:
            raise BudgetlabError(f"lab {entry.number} has not passed yet; pass it first, or use --force to look anyway")
        if not yes and not typer.confirm("Look at the reference before your fix passes?"):
            raise typer.Exit(1)
    console.print(files.solution_diff(entry), markup=False, highlight=False)


@app.command("report")
def report(fmt: ReportFormat = typer.Option(ReportFormat.md, "--format", help="Output format."),
           merge: Optional[List[Path]] = typer.Option(None, "--merge", help="Merge learners' JSON reports into a cohort table."),
           ) -> None:
    """Print your progress (or, with --merge, a cohort table for a facilitator)."""
    from budgetlab.commands import reporting

    if merge:
        console.print(reporting.merge(merge, fmt.value), markup=False, highlight=False)
    else:
        console.print(reporting.render(reporting.learner_rows(_warn), fmt.value), markup=False, highlight=False)


@app.command("facilitate")
def facilitate(host: str = typer.Option("127.0.0.1", help="Address to listen on; 0.0.0.0 serves the room on the LAN."),
               port: int = typer.Option(8765, help="Port to listen on; 0 picks a free one."),
               stuck_after: float = typer.Option(15.0, "--stuck-after", min=0,
                                                 help="Minutes failing the same check before a learner is flagged stuck."),
               new: bool = typer.Option(False, "--new", help="Close the previous room and open a fresh one with a new token.")) -> None:
    """Serve a live room board of everyone's checks, for a facilitator (Ctrl-C stops it)."""
    from budgetlab.board import server

    raise typer.Exit(server.serve(host, port, stuck_after, new, lambda line: console.print(line, markup=False)))


@app.command("join")
def join(url: str = typer.Argument(..., help="The join URL your facilitator shows (http://HOST:PORT/join/TOKEN)."),
         name: str = typer.Option(..., "--as", help="Your name on the room board.")) -> None:
    """Post every check's result (never your code) to your facilitator's room board."""
    from budgetlab.board import client

    console.print(client.join(url, name), markup=False)


@app.command("leave")
def leave() -> None:
    """Stop posting check results to the room board."""
    from budgetlab.board import client

    console.print(client.leave(), markup=False)


@app.command("doctor")
def doctor() -> None:
    """Check Python, the stack, PostgreSQL, Redis, Celery, ports and stale workers."""
    from budgetlab.commands import doctoring

    problems = doctoring.diagnose(console)
    raise typer.Exit(1 if problems else 0)


class _AuditHelp(typer.core.TyperCommand):
    """The audit command, whose epilog (rules, exit codes, config keys) is built only when help is shown.

    Building it imports the whole audit, which every other command would pay for at start-up.
    """

    def format_help(self, ctx, formatter):
        from budgetlab.audit.command import epilog

        # Rich reads [brackets] as markup; escaped, the table name prints as written.
        self.epilog = epilog().replace("[", "\\[")
        return super().format_help(ctx, formatter)


@app.command("audit", cls=_AuditHelp)
def audit(paths: List[Path] = typer.Argument(..., help="Files or folders of your code base."),
          fmt: AuditFormat = typer.Option(AuditFormat.full, "--output-format", "--format",
                                          help="Output format (text is the old name of concise)."),
          select: Optional[str] = typer.Option(None, help="Only these rules, e.g. BL001,BL002."),
          ignore: Optional[str] = typer.Option(None, help="Skip these rules."),
          statistics: bool = typer.Option(False, "--statistics", help="Print the number of findings per rule."),
          allow_unreadable: bool = typer.Option(False, "--allow-unreadable",
                                                help="Exit 0 or 1 even when a file could not be read (still reported as BL000)."),
          ) -> None:
    """Find the failures the labs teach in your own code base (static: nothing is imported or run)."""
    from budgetlab.audit import run_audit

    raise typer.Exit(run_audit([str(p) for p in paths], fmt.value, select, ignore,
                               allow_unreadable=allow_unreadable, show_statistics=statistics))


@stack_app.command("up")
def stack_up() -> None:
    """Start the servers (if needed) and prepare the workshop database."""
    from budgetlab import stack
    from budgetlab.commands import views
    from budgetlab.harness import database

    stack.up()
    database.prepare()
    orphans = database.remove_orphans()
    console.print(views.stack_table())
    if orphans:
        console.print(f"dropped {len(orphans)} scratch database(s) whose check or run had died: {', '.join(orphans)}")


@stack_app.command("down")
def stack_down(remove_copies: bool = typer.Option(
        False, "--remove-copies",
        help="Also delete the data and binaries kept under /tmp for a checkout the server cannot reach.")) -> None:
    """Stop the servers the stack started, by PID."""
    from budgetlab import stack

    stopped = stack.down()
    console.print("stopped " + ", ".join(stopped) if stopped else "nothing to stop: no server the stack started is running")
    if remove_copies:
        for folder in stack.remove_outside_copies():
            console.print(f"removed {folder}")


@stack_app.command("env")
def stack_env() -> None:
    """Print the variables that point Kontor at the stack, for: eval "$(budgetlab stack env)"."""
    import shlex

    from budgetlab import stack

    # Kontor reads only its own variables (it never imports budgetlab): these are its seams. Nothing of the
    # lab clock: it belongs to the processes budgetlab starts for lab code, never to a shell, whose every
    # Python program (Jupyter's server, pip, pytest) it would run 200 times faster, time-outs included.
    variables = {"KONTOR_DATABASE_URL": stack.lab_database_url(), "KONTOR_BROKER_URL": stack.redis_url(0),
                 "DJANGO_SETTINGS_MODULE": "kontor.settings"}
    for name, value in variables.items():
        typer.echo(f"export {name}={shlex.quote(value)}")


@stack_app.command("exec", context_settings={"ignore_unknown_options": True})
def stack_exec(command: List[str] = typer.Argument(..., help="The program and its arguments, after --.")) -> None:
    """Run a program of lab code (a worker's launch script, say) on the stack and on the lab clock, as budgetlab's own workers run."""
    import shutil

    from budgetlab import paths, stack
    from budgetlab.harness.workers import Environment

    # The labs' tree on the path, Kontor pointed at the stack, the lab clock: what every worker of a check gets;
    # and the workshop's interpreter first on PATH, as in an activated virtualenv.
    env = Environment(paths.labs_root() / "labs", stack.lab_database_url(), stack.redis_url(0)).variables()
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("PYTHON", sys.executable)  # the launch scripts run Celery from it
    program = shutil.which(command[0], path=env["PATH"])
    if program is None:
        raise BudgetlabError(f"no program {command[0]!r} to run")
    os.execve(program, command, env)


@stack_app.command("status")
def stack_status() -> None:
    """Show each server's version, URL and PID."""
    from budgetlab.commands import views

    table, healthy = views.stack_table(with_health=True)
    console.print(table)
    if not healthy:
        raise typer.Exit(1)


def main() -> None:
    """Run the CLI; a problem a person can act on becomes one line on stderr and exit 2."""
    try:
        code = app(standalone_mode=False)
    except BudgetlabError as exc:
        errors.print(f"[bold red]error:[/] {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        errors.print("interrupted; every process this command started has been stopped")
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        errors.print("aborted")
        sys.exit(1)
    except Exception as exc:  # click's usage errors
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(2)
        raise
    if code == 130:  # Typer turns Ctrl-C into exit 130 after the commands' own clean-up ran
        errors.print("interrupted; every process this command started has been stopped")
    sys.exit(code if isinstance(code, int) else 0)
