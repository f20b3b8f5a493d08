"""Where a process of lab code that ran past its deadline was: the line it was on, its CPU, its wait for a core.

A grader that runs lab code in a process of its own (lab 4's probe) and
waits for it in vain asks it, before killing it, what each of its threads
was doing. The process armed faulthandler for DUMP_SIGNAL when it started;
faulthandler writes every thread's stack from inside the signal handler, so
a thread blocked on a lock or a socket answers too. What /proc says the
process used (CPU) and waited (a core, as the stall meter reads it) tells
code that computes from code that waits, and both from a machine too busy
to run it. Without /proc (macOS) only the line is known.
"""

from __future__ import annotations

import faulthandler
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from budgetlab.stack.process import cpu_seconds
from budgetlab.stories.stallmeter import waited_most

DUMP_SIGNAL = signal.SIGUSR1
# One frame of faulthandler's dump: '  File "/path/x.py", line 12 in name'.
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<name>.+)$')


def arm() -> None:
    """In the process that may be asked: answer DUMP_SIGNAL by writing every thread's stack to stderr, then end.

    Chained to the signal's default action (terminate), so the asker reads
    the whole dump as soon as the process has written it.
    """
    faulthandler.register(DUMP_SIGNAL, all_threads=True, chain=True)


@dataclass(frozen=True)
class Stuck:
    """What a process showed when its deadline passed."""

    #: Wall seconds from its start to the question.
    seconds: float
    #: CPU seconds it had used; None where /proc cannot say.
    cpu: float | None
    #: Wall seconds its most kept thread had waited for a core (0 where /proc cannot say).
    kept: float
    #: (file, line, function) of the innermost frame in the watched folder, the signalled thread's first; None when
    #: no such frame was on any stack.
    frame: tuple[Path, int, str] | None

    @property
    def computing(self) -> bool | None:
        """Whether it spent most of its time on a CPU (None: unknown)."""
        return None if self.cpu is None else self.cpu >= (self.seconds - self.kept) / 2


def ask(process: subprocess.Popen, started: float, folder: Path, grace: float = 5.0) -> Stuck:
    """Read what the process used and waited, ask for its stacks (it ends once written), kill it if it does not;
    return what was seen.

    `process` has its stderr on a pipe and called arm(); `started` is its
    time.monotonic() start.
    """
    seconds, cpu, kept = time.monotonic() - started, cpu_seconds(process.pid), waited_most(process.pid)
    process.send_signal(DUMP_SIGNAL)  # nothing, once it has ended
    try:
        _out, dump = process.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        _out, dump = process.communicate()
    return Stuck(seconds, cpu, kept, innermost(dump or "", folder))


def innermost(dump: str, folder: Path) -> tuple[Path, int, str] | None:
    """The innermost frame under `folder` in a faulthandler dump, the signalled ("Current") thread's first."""
    folder = folder.resolve()
    found: dict[bool, tuple[Path, int, str]] = {}
    current = False
    for line in dump.splitlines():
        if line.startswith(("Current thread", "Thread ")):
            current = line.startswith("Current thread")
            continue
        match = _FRAME.match(line)
        if match and current not in found:
            path = Path(match["file"]).resolve()
            if path.is_relative_to(folder):
                found[current] = (path, int(match["line"]), match["name"].strip())
    return found.get(True) or found.get(False)
