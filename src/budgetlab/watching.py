"""`budgetlab watch`: re-check a lab whenever one of its files is saved."""

from __future__ import annotations

from rich.console import Console

from budgetlab import checking, labs, progress, views


def _first_unpassed() -> labs.Lab:
    data = progress.load()
    for lab in labs.load():
        if not progress.lab_entry(data, lab.number)["passed"]:
            return lab
    return labs.load()[-1]


def watch(number: int | None, poll: bool, console: Console) -> int:
    """Check once, then again after every save, until Ctrl-C."""
    from watchfiles import watch as file_events

    lab = labs.get(number) if number is not None else _first_unpassed()
    folder = lab.starter_dir()

    def check_now() -> None:
        console.clear()
        console.print(f"watching {folder} — Ctrl-C to stop")
        try:
            outcome = checking.run(lab, "labs", on_result=lambda r: console.print(views.check_line(r)))
        except Exception as exc:  # a broken file is shown and watched again, never a crash
            console.print(f"[red]error:[/] {exc}")
            return
        console.print(views.check_summary(outcome))
        if not outcome.could_not_grade:
            progress.record_check(lab.number, outcome.exit_code == 0, outcome.passed, len(outcome.results))

    check_now()
    if poll:
        console.print("polling for changes every 0.5 s")
    try:
        for _changes in file_events(folder, force_polling=poll, poll_delay_ms=500, rust_timeout=0,
                                    watch_filter=lambda _change, path: path.rsplit("/", 1)[-1] in lab.files):
            check_now()
    except KeyboardInterrupt:
        return 0
    return 0
