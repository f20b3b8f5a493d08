"""Import a target's lab modules in a child interpreter, to name the file when lab code hangs, exits or dies at import.

A worker that never starts only says "no ready line"; the probe says which
of the learner's files did what while it was being imported. `budgetlab
check` starts it only when grading gives a reason to (no worker ready and
no check done after PROBE_AFTER seconds, a check that could not grade, a
grading process that ended early): a child interpreter that imports
Django, Celery and Kontor costs most of a CPU-second, and a check whose
workers start has shown that the lab's code imports.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budgetlab import stack
from budgetlab.errors import BudgetlabError
from budgetlab.harness import checkreport
from budgetlab.labs import Lab
from budgetlab.paths import display_path
from budgetlab.stack.process import stop_pid

# Importing a lab module with Django and Celery takes a second or two, several on a busy machine.
# BUDGETLAB_HANG_SECONDS changes it: more for a very slow machine, less for the harness's own test.
HANG_SECONDS = 20.0
# Wall seconds a check may go without a ready worker or a finished check before the probe starts.
PROBE_AFTER = 5.0


def hang_seconds() -> float:
    """Return the wall seconds an import may take before the probe calls it hung."""
    raw = os.environ.get("BUDGETLAB_HANG_SECONDS", "")
    try:
        return float(raw) if raw else HANG_SECONDS
    except ValueError:
        raise BudgetlabError(f"BUDGETLAB_HANG_SECONDS={raw!r} is not a number of seconds") from None

_PROBE = """
import importlib, sys
import django
django.setup()
for name in sys.argv[1:]:
    print("importing", name, flush=True)
    importlib.import_module(name)
print("imported", flush=True)
"""


class ImportProbe:
    """One child interpreter importing the lab's Python files in order, watched until it ends or hangs."""

    def __init__(self, lab: Lab, root: Path):
        self._files = {f"{lab.slug}.{Path(name).with_suffix('').as_posix().replace('/', '.')}": root / lab.slug / name
                       for name in lab.files if name.endswith(".py")}
        self._root = root
        # Read while the check starts, when the stack is known to be up: a server may stop before the probe does.
        self._env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", checkreport.VARIABLE)}
        self._env.update(PYTHONPATH=os.pathsep.join([str(root), *filter(None, [self._env.get("PYTHONPATH")])]),
                         DJANGO_SETTINGS_MODULE="kontor.settings", KONTOR_DATABASE_URL=stack.lab_database_url(),
                         KONTOR_BROKER_URL=stack.redis_url(0), PYTHONUNBUFFERED="1")
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self._started = time.monotonic()
        self._hung: str | None = None
        self.proc = None

    def start(self) -> None:
        """Start importing the lab's files in a child interpreter; nothing when started already or no file is Python."""
        if self.proc is not None or not self._files:
            return
        self._started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-c", _PROBE, *self._files], stdout=self._out,
                                     stderr=self._err, stdin=subprocess.DEVNULL, env=self._env, cwd=self._root,
                                     start_new_session=True)

    def _read(self, stream) -> str:
        stream.seek(0)
        return stream.read().decode(errors="replace")

    def _current_file(self) -> str:
        importing = [line.split(" ", 1)[1] for line in self._read(self._out).splitlines() if line.startswith("importing ")]
        module = importing[-1] if importing else next(iter(self._files))
        return display_path(self._files[module])

    def verdict(self) -> str | None:
        """Return one sentence when lab code hung, exited or died at import; None while all is well so far."""
        if self.proc is None:
            return None
        if self._hung:
            return self._hung
        code = self.proc.poll()
        if code is None:
            waited = time.monotonic() - self._started
            if waited < hang_seconds():
                return None
            self._hung = (f"{self._current_file()} hung at import: still importing after {waited:.0f} s, "
                          "so no worker could start; look for work done at module level (a loop, a wait, a connection)")
            self.stop()
            return self._hung
        if code == 0 and self._read(self._out).rstrip().endswith("imported"):
            return None
        where = self._current_file()
        if code < 0:
            name = signal.Signals(-code).name
            return f"{where} killed its own process with {name} while it was being imported"
        errors = self._read(self._err).strip().splitlines()
        if any(line.startswith("Traceback") for line in errors):
            return f"{where} raised an error at import: {errors[-1].strip()}"
        return f"{where} exited with status {code} while it was being imported, so no worker could start"

    def wait_verdict(self, timeout: float | None = None) -> str | None:
        """Start the probe if it has not started; wait until it has finished or hung and return its verdict.

        By default it waits as long as an import may take before it counts
        as hung, so a hanging import always ends in its own sentence.
        """
        self.start()
        deadline = time.monotonic() + (hang_seconds() + 1.0 if timeout is None else timeout)
        while self.proc is not None and self.proc.poll() is None and time.monotonic() < deadline:
            verdict = self.verdict()
            if verdict:
                return verdict
            time.sleep(0.05)
        return self.verdict()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            stop_pid(self.proc.pid, grace=2)
            self.proc.wait()

    def close(self) -> None:
        self.stop()
        self._out.close()
        self._err.close()
