"""Regenerates the command transcripts the docs pages include, or checks that they still match real runs.

Each entry of TRANSCRIPTS runs one command as a learner would type it and
stores what it printed in docs/transcripts/<name>.txt. A lab's entries come
from the transcripts its table in tests/labs.toml declares: the name says the
command (lab3-check-starter is `budgetlab check 3`), so a new lab adds none here. Pages include a file
with pymdownx.snippets:

    ```console
    --8<-- "transcripts/lab2-check.txt"
    ```

so no transcript on the site is ever typed by hand. A stored transcript is one
real run as printed, with this checkout's path shown as ~/budgetlab. Durations,
counts that depend on load, and PIDs differ on the next run, so an entry's masks
blank them on both sides before the two are compared; an `unordered` entry also
ignores the order of the words in each paragraph, for output whose events race.
tests/docs/test_transcripts.py re-runs every entry and fails when a stored
transcript no longer matches.

Usage:
    python scripts/transcripts.py            # regenerate every transcript
    python scripts/transcripts.py NAME ...   # regenerate only these
    python scripts/transcripts.py --check    # compare, write nothing, exit 1 on drift
    python scripts/transcripts.py -j 1 ...   # one command at a time (default: one per core)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRANSCRIPT_DIR = ROOT / "docs" / "transcripts"
PROGRAM = "budgetlab"
# The same CLI on Celery 5.7.0; its path is typed as a learner would, relative to the checkout.
CELERY57 = ".venv-celery57/bin/budgetlab"

# Fixed terminal settings, so that a transcript depends on the command and not
# on the window it happened to be recorded in.
STABLE_ENV = {
    "COLUMNS": "80",
    "LINES": "40",
    "NO_COLOR": "1",
    "TERM": "dumb",
    "TZ": "UTC",
    "LC_ALL": "C.UTF-8",
    "PYTHONIOENCODING": "utf-8",
}


@dataclass(frozen=True)
class Transcript:
    """One command whose output a docs page shows."""

    #: File name under docs/transcripts/, without ".txt".
    name: str
    #: The command as a learner types it; a leading "budgetlab" runs this checkout's CLI.
    command: tuple[str, ...]
    #: Exit status the command is expected to end with (a grader on a pristine lab fails on purpose).
    exit_code: int = 0
    #: (regular expression, replacement) pairs for values that change from run to run: PIDs, durations, counts.
    #: They apply only when comparing; the stored transcript keeps the values of the run that recorded it.
    masks: tuple[tuple[str, str], ...] = ()
    #: Compare each paragraph as a bag of words: for output whose events race (two soft limits in the same
    #: millisecond) and whose table columns, hence line breaks, follow the width of a masked number.
    unordered: bool = False
    #: Extra environment variables for this command only.
    env: dict[str, str] = field(default_factory=dict)
    #: Why a fresh run is not compared with the stored one ("" when it is): recorded, shown, never graded.
    not_compared: str = ""
    #: Seconds before the command is considered hung.
    timeout: float = 300.0


# Each entry keeps its progress in a folder of its own, so one transcript never
# depends on the attempts another one recorded.
def _fresh_progress(name: str) -> dict[str, str]:
    return {"BUDGETLAB_STATE_DIR": str(ROOT / ".budgetlab" / "transcripts" / name)}


def _options(lab) -> dict[str, dict]:
    """What a lab's transcripts need beyond their command: its story module's TRANSCRIPTS.

    Keyed by the transcript's name without "labN-" and "-celery57" ("check-starter"), else by its
    verb ("run"); each value holds Transcript fields: `masks`, (regular expression, replacement)
    pairs for what changes from run to run, `unordered`, and for a transcript of another command
    (lab 4's "benchmark") its `command` and `timeout`. Output that is the same on every run needs
    nothing there.
    """
    import importlib

    return getattr(importlib.import_module(lab.story), "TRANSCRIPTS", {}) if lab.story else {}


# The name of a lab's check or run transcript says its command: lab3-check-starter is `budgetlab check 3`,
# lab1-run-solution-celery57 is `budgetlab run 1 --target solutions` from the Celery 5.7 environment.
_LAB_COMMAND = re.compile(r"lab(?P<number>\d+)-(?P<verb>check|run)-(?P<kind>starter|solution)(?P<celery57>-celery57)?")


def _lab_transcripts(root: Path = ROOT) -> tuple[list[Transcript], list[str]]:
    """Return an entry for every transcript tests/labs.toml declares, and the declared names no rule here can run."""
    src = str(root / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    from budgetlab import labs

    entries, unknown = [], []
    for lab in labs.load(root):
        lab_options = _options(lab)
        for path in lab.transcripts:
            name = Path(path).stem
            match = _LAB_COMMAND.fullmatch(name)
            if match and int(match["number"]) == lab.number:
                program = CELERY57 if match["celery57"] else PROGRAM
                target = ("--target", "solutions") if match["kind"] == "solution" else ()
                starter_check = match["verb"] == "check" and match["kind"] == "starter"
                options = lab_options.get(name.removesuffix("-celery57").removeprefix(f"lab{lab.number}-"),
                                          lab_options.get(match["verb"], {}))
                entries.append(Transcript(name, (program, match["verb"], str(lab.number), *target),
                                          exit_code=1 if starter_check else 0, env=_fresh_progress(name), **options))
            elif "command" in lab_options.get(name.removeprefix(f"lab{lab.number}-"), {}):
                entries.append(Transcript(name, **lab_options[name.removeprefix(f"lab{lab.number}-")]))
            else:
                unknown.append(f"{path} (lab {lab.number})")
    return entries, unknown


_FROM_MANIFEST, UNDECLARABLE = _lab_transcripts()
TRANSCRIPTS: tuple[Transcript, ...] = (
    Transcript("budgetlab-list", ("budgetlab", "list"), env=_fresh_progress("list")),
    Transcript("budgetlab-doctor", ("budgetlab", "doctor"), env=_fresh_progress("doctor"),
               masks=((r"127\.0\.0\.1:\d+", "127.0.0.1:PORT"),
                      # The interpreter's patch release and its site-packages folder differ from machine to machine.
                      (r"Python \d+\.\d+\.\d+", "Python 3.X.Y"), (r"python3\.\d+/site-packages", "python3.X/site-packages"))),
    *_FROM_MANIFEST,
)


class TranscriptError(Exception):
    """A command could not be recorded: it hung, or ended with an unexpected exit status."""


def path_for(entry: Transcript, directory: Path = TRANSCRIPT_DIR) -> Path:
    """Return where an entry's transcript is stored."""
    return directory / f"{entry.name}.txt"


def argv_for(entry: Transcript) -> list[str]:
    """Return the argv that runs an entry, with `budgetlab` resolved to this checkout's CLI."""
    if entry.command and entry.command[0] == PROGRAM:
        # Through the interpreter running this script, so the transcript shows
        # this checkout's CLI, whatever `budgetlab` on PATH may be.
        launcher = f"import sys; sys.argv[0] = {PROGRAM!r}; from budgetlab.cli import main; main()"
        return [sys.executable, "-c", launcher, *entry.command[1:]]
    if "/" in entry.command[0] and not Path(entry.command[0]).is_absolute():
        return [str(ROOT / entry.command[0]), *entry.command[1:]]
    return list(entry.command)


def unavailable_reason(entry: Transcript) -> str | None:
    """Return why an entry's command cannot run in this checkout yet, or None when it can."""
    if entry.not_compared:
        return entry.not_compared
    if entry.command and entry.command[0] == CELERY57 and not (ROOT / CELERY57).exists():
        return f"{CELERY57} is missing; `make venv-celery57` creates it"
    if not entry.command or entry.command[0] != PROGRAM:
        return None
    src = str(ROOT / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    try:
        import typer.main

        from budgetlab.cli import app
    except Exception as exc:  # noqa: BLE001 - an unfinished CLI may fail to import in any way
        return f"budgetlab.cli cannot be imported: {type(exc).__name__}: {exc}"
    command = typer.main.get_command(app)
    ctx = command.context_class(command, info_name=PROGRAM)
    for word in entry.command[1:]:
        if word.startswith("-") or not hasattr(command, "get_command"):
            break
        sub = command.get_command(ctx, word)
        if sub is None:
            return f"`{PROGRAM} {' '.join(entry.command[1:])}`: the CLI has no command {word!r} yet"
        command, ctx = sub, sub.context_class(sub, info_name=word, parent=ctx)
    return None


def normalise(text: str, masks: tuple[tuple[str, str], ...] = ()) -> str:
    """Apply the masks, drop trailing spaces and end with exactly one newline."""
    for pattern, replacement in masks:
        text = re.sub(pattern, replacement, text, flags=re.MULTILINE)
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def comparable(text: str, entry: Transcript) -> list[str]:
    """Return what two runs of an entry must agree on: masked lines, or each paragraph's sorted words."""
    masked = normalise(text, entry.masks)
    if not entry.unordered:
        # Column padding follows the widest value in a column, which a mask hides.
        return [re.sub(r" {2,}", " ", line) for line in masked.splitlines()]
    return [" ".join(sorted(paragraph.split())) for paragraph in re.split(r"\n\s*\n", masked)]


def record(entry: Transcript) -> str:
    """Run an entry's command and return its transcript: the prompt line, then stdout and stderr as printed."""
    env = {**os.environ, **STABLE_ENV, **entry.env}
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    try:
        result = subprocess.run(
            argv_for(entry),
            check=False,
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=entry.timeout,
        )
    except subprocess.TimeoutExpired as exc:
        raise TranscriptError(f"{entry.name}: `{' '.join(entry.command)}` still ran after {entry.timeout:g} s") from exc
    if result.returncode != entry.exit_code:
        raise TranscriptError(
            f"{entry.name}: `{' '.join(entry.command)}` exited {result.returncode}, expected {entry.exit_code}:\n"
            + result.stdout[-2000:]
        )
    # A reader's clone is not this machine's folder, and keeps its progress (and logs) in .budgetlab
    # itself: the home-relative path of a learner's own checkout is what they would see.
    state = Path(_fresh_progress(entry.name)["BUDGETLAB_STATE_DIR"])
    printed = result.stdout.replace(str(state), str(ROOT / ".budgetlab"))
    printed = printed.replace(str(state.relative_to(ROOT)), ".budgetlab")
    return normalise(f"$ {' '.join(entry.command)}\n{printed}".replace(str(ROOT), "~/budgetlab"))


def compare(entry: Transcript, directory: Path = TRANSCRIPT_DIR) -> str | None:
    """Re-run an entry and return a unified diff against its stored transcript, or None when they match."""
    stored_path = path_for(entry, directory)
    stored = stored_path.read_text(encoding="utf-8") if stored_path.exists() else ""
    fresh = record(entry)
    if comparable(fresh, entry) == comparable(stored, entry):
        return None
    # The masked texts, so that the diff shows what counts and not every duration.
    diff = difflib.unified_diff(
        normalise(stored, entry.masks).splitlines(keepends=True),
        normalise(fresh, entry.masks).splitlines(keepends=True),
        fromfile=f"{stored_path.name} (stored)",
        tofile=f"{' '.join(entry.command)} (now)",
    )
    return "".join(diff)


def write(entry: Transcript, directory: Path = TRANSCRIPT_DIR) -> Path:
    """Record an entry and store its transcript; return the file written."""
    directory.mkdir(parents=True, exist_ok=True)
    target = path_for(entry, directory)
    target.write_text(record(entry), encoding="utf-8")
    return target


def main(argv: list[str] | None = None) -> int:
    """Regenerate or check the transcripts named on the command line, or all of them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="transcripts to process (default: all)")
    parser.add_argument("--check", action="store_true", help="compare with real runs, write nothing")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                        help="commands at once (default: the machine's cores)")
    args = parser.parse_args(argv)

    if UNDECLARABLE:
        print(f"error: tests/labs.toml declares transcripts no command is known for: {', '.join(UNDECLARABLE)}; "
              "name them labN-check-starter, labN-run-solution and so on", file=sys.stderr)
        return 2
    known = {entry.name: entry for entry in TRANSCRIPTS}
    unknown = [name for name in args.names if name not in known]
    if unknown:
        print(f"error: no transcript named {', '.join(unknown)}; known: {', '.join(known) or 'none'}", file=sys.stderr)
        return 2
    entries = [known[name] for name in args.names] if args.names else list(TRANSCRIPTS)
    if not entries:
        print("no transcripts listed in scripts/transcripts.py yet")
        return 0

    def one(entry: Transcript) -> tuple[str, bool]:
        """Process one entry; return what to print and whether it drifted. Raises TranscriptError."""
        reason = unavailable_reason(entry)
        if reason:
            return f"skip  {entry.name}: {reason}", False
        if args.check:
            diff = compare(entry)
            return (f"DRIFT {entry.name}\n{diff}", True) if diff else (f"ok    {entry.name}", False)
        return f"wrote {write(entry).relative_to(ROOT)}", False

    # Each command is a check or run with a rig and a progress folder of its own, so they run side by side.
    drifted = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(one, entry) for entry in entries]
        try:
            for future in as_completed(futures):
                line, drift = future.result()
                drifted += drift
                print(line, flush=True)
        except TranscriptError as exc:
            for future in futures:
                future.cancel()
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if drifted:
        print(f"{drifted} transcript(s) no longer match; run `python scripts/transcripts.py` and review the diff")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
