"""`make test`: bring the stack up, run the suite and then its other passes, and stop (and remove from /tmp) what it started.

The first pass runs every test on the embedded stack from this Python's
wheels. Two more passes run the tests that prove the labs elsewhere, side
by side once the first pass is green (see run_passes):

- on a second Python (SECOND_PYTHON in the Makefile: 3.13, in
  .venv-second), with the PostgreSQL and Redis installed on the machine
  started as the stack's private children (marker `second_python`); with
  no such interpreter or no installed servers it says so and is skipped;
- only when asked with BUDGETLAB_EXTERNAL=1 (as `.ci/run` does, on a
  machine that provides them), against the PostgreSQL and Redis named by
  BUDGETLAB_EXTERNAL_DATABASE_URL and BUDGETLAB_EXTERNAL_REDIS_URL (by
  default this machine's PostgreSQL 15 on 5432 and Redis 7 on 6379), the
  tests marked `external`. A server that merely answers on a port is never
  used unasked: it may hold somebody's data.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from budgetlab import paths, stack
from budgetlab.commands import testplan
from budgetlab.errors import BudgetlabError
from budgetlab.harness import database
from budgetlab.stack import secrets

# The workshop database's name says whose it is, beside whatever else that server holds.
MACHINE_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/budgetlab_kontor"
MACHINE_REDIS_URL = "redis://127.0.0.1:6379/0"


def external_urls() -> dict[str, str] | None:
    """Return DATABASE_URL and REDIS_URL for the external pass, or None when nobody asked for one."""
    if os.environ.get("BUDGETLAB_EXTERNAL", "") not in ("1", "yes", "true"):
        return None
    return {"DATABASE_URL": os.environ.get("BUDGETLAB_EXTERNAL_DATABASE_URL", MACHINE_DATABASE_URL),
            "REDIS_URL": os.environ.get("BUDGETLAB_EXTERNAL_REDIS_URL", MACHINE_REDIS_URL)}


# Where the time goes: pytest's table of the slowest tests closes every pass.
DURATIONS = "--durations=15"
# pytest's exit code when no test was selected: a pass with nothing to run alone is a pass.
NO_TESTS = 5


def cores() -> int:
    return os.cpu_count() or 1


# Set for a pass that shares the machine with another: how many whole checks it may run at once.
GROUPS_VARIABLE = "BUDGETLAB_CHECK_GROUPS"
# Set for every pass but the first, so a test can tell which servers it proves the labs on.
PASS_VARIABLE = "BUDGETLAB_PASS"


def check_groups() -> int:
    """Return how many groups of whole checks a pass runs side by side: one per core, or its share of them."""
    raw = os.environ.get(GROUPS_VARIABLE, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else cores()


def side_by_side(groups: int | None = None) -> int:
    """Return how many pytest-xdist processes run the tests: one per check group and one more.

    BUDGETLAB_TEST_WORKERS overrides the number; 0 runs one process.

    Each live test has a rig of its own (database, Redis lease, queues,
    workers), so tests share the machine, never a resource. The tests that
    play a whole check fill one group per core (tests/conftest.py), each
    group in one process, test after test, so at most one check per core
    runs at a time; the one process more runs every other test meanwhile.
    With no process beyond the groups, those tests would wait for a group
    to end. Tests that share a costly session fixture stay in one process;
    the few marked `alone`, which need the servers to themselves, run by
    themselves afterwards.
    """
    raw = os.environ.get("BUDGETLAB_TEST_WORKERS", "")
    try:
        workers = int(raw) if raw else (groups or check_groups()) + 1
    except ValueError:
        raise BudgetlabError(f"BUDGETLAB_TEST_WORKERS={raw!r} is not a number of processes") from None
    if workers < 0:
        raise BudgetlabError(f"BUDGETLAB_TEST_WORKERS={raw!r} is not a number of processes")
    return workers


def _pytest(args: list[str], env: dict[str, str] | None = None, marker: str = "", python: str = sys.executable,
            out=None) -> int:
    """Run one pass: side by side, then the `alone` tests by themselves (`marker` narrows both)."""
    groups = (env or {}).get(GROUPS_VARIABLE, "")
    workers = side_by_side(int(groups) if groups.isdigit() else None)
    # Where the pass's tests write what each took (tests/conftest.py), for scripts/test_seconds.py.
    seconds = paths.logs_dir() / testplan.SECONDS_LOG.format((env or os.environ).get(PASS_VARIABLE) or testplan.FIRST)
    seconds.unlink(missing_ok=True)
    env = dict(env or os.environ, **{testplan.SECONDS_VARIABLE: str(seconds)})
    if workers == 0 or "-m" in args:
        return _pytest_once([*(["-m", marker] if marker else []), *args], env, python, out)
    within = f"({marker}) and " if marker else ""
    side = ["-n", str(workers), "--dist", "loadgroup", "-m", f"{within}not alone", *args]
    code = _pytest_once(side, env, python, out)
    alone = _pytest_once(["-m", f"{within}alone", *args], env, python, out)
    return code or (0 if alone == NO_TESTS else alone)


def _pytest_once(args: list[str], env: dict[str, str] | None, python: str = sys.executable, out=None) -> int:
    args = [DURATIONS, *args]
    print(f"$ pytest {' '.join(args)}", file=out or sys.stdout, flush=True)
    return subprocess.call([python, "-m", "pytest", *args], env=env, stdout=out, stderr=out and subprocess.STDOUT)


# The workshop's packages, which every worker, check and command imports. Not the labs or the suite:
# tests copy and count those trees (the audit's fixtures), and a copy would carry the bytecode along.
SOURCES = ("src",)


def compile_sources() -> None:
    """Compile the checkout's Python once, before the suite starts its thousand-odd processes.

    A machine that sets PYTHONDONTWRITEBYTECODE (CI's does) would otherwise
    have every worker, check and command compile the same modules again;
    bytecode never changes what runs, and Python recompiles a file that
    changes afterwards.
    """
    for folder in SOURCES:
        compileall.compile_dir(paths.repo_root() / folder, quiet=2, workers=0)


def _hosts(urls: dict[str, str]) -> str:
    return ", ".join(f"{name} {secrets.address(url)}" for name, url in urls.items())


@dataclass
class Pass:
    """One pass after the first: its interpreter, the variables that choose its servers, and its tests."""

    name: str
    python: str
    env: dict[str, str]
    marker: str
    # Commands that prepare its servers (run with its env) and, for a stack of its own, take it down again.
    prepare: list[list[str]] = field(default_factory=list)
    finish: list[list[str]] = field(default_factory=list)

    def run(self, args: list[str], out) -> int:
        env = dict(os.environ, **self.env)
        try:
            for command in self.prepare:
                print(f"$ {' '.join(command)}", file=out, flush=True)
                code = subprocess.call(command, env=env, stdout=out, stderr=subprocess.STDOUT)
                if code:
                    return code
            return _pytest(args, env, marker=self.marker, python=self.python, out=out)
        finally:
            for command in self.finish:
                subprocess.call(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def _cli(python: str, *words: str) -> list[str]:
    return [python, "-m", "budgetlab.cli_entry", *words]


def external_pass() -> Pass | None:
    """The pass on the servers BUDGETLAB_EXTERNAL names, or None when nobody asked for one."""
    external = external_urls()
    if not external:
        return None
    return Pass(f"external servers ({_hosts(external)})", sys.executable, {**external, PASS_VARIABLE: "external"},
                "external", prepare=[_cli(sys.executable, "stack", "up")])


# The second pass's interpreter, made by the Makefile's venv-second target.
SECOND_VENV = ".venv-second"


def second_python_pass() -> Pass | None:
    """The pass on a second Python with the installed servers, or None (saying why) when either is missing."""
    from budgetlab.stack import binaries

    python = paths.repo_root() / SECOND_VENV / "bin" / "python"
    if not python.exists():
        print(f"note: no {SECOND_VENV} (the Makefile found no Python 3.13), so the pass on a second Python is skipped",
              flush=True)
        return None
    postgres, redis = binaries.installed_postgres(), binaries.installed_redis()
    if postgres is None or redis is None:
        absent = " or ".join(name for name, found in (("PostgreSQL", postgres), ("Redis", redis)) if found is None)
        print(f"note: no installed {absent} on this machine, so the pass on a second Python is skipped", flush=True)
        return None
    version = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    env = {"BUDGETLAB_STACK_DIR": str(paths.repo_root() / ".budgetlab" / "second"), PASS_VARIABLE: "second-python",
           binaries.POSTGRES_VARIABLE: str(postgres.bin_dir), binaries.REDIS_VARIABLE: str(redis.path)}
    name = (f"Python {version}, PostgreSQL {postgres.version_text} from {postgres.bin_dir} and Redis "
            f"{redis.version_text} from {redis.path}")
    compiled = [str(python), "-m", "compileall", "-q", *(str(paths.repo_root() / folder) for folder in SOURCES)]
    return Pass(name, str(python), env, "second_python", prepare=[compiled, _cli(str(python), "stack", "up")],
                finish=[_cli(str(python), "stack", "down", "--remove-copies")])


def run_passes(passes: list[Pass], args: list[str]) -> int:
    """Run the passes side by side and print each one's output when it ends.

    The first keeps one check group per core; each other pass runs its
    checks in one group beside it. Measured in rehearsals of `.ci/run`:
    the second Python's pass (sixteen checks) alone on half the machine
    ran long after the external one (eight checks) had ended, 165 s; one
    after the other, each on the whole machine, their pytest runs took
    69 s and 31 s; side by side as here, 77 s and 78 s.
    """
    results: dict[int, int] = {}
    logs = [paths.logs_dir() / f"test-pass-{index + 1}.log" for index in range(len(passes))]

    def play(index: int) -> None:
        one = passes[index]
        if index:
            one.env.setdefault(GROUPS_VARIABLE, "1")
        with open(logs[index], "w") as out:
            results[index] = one.run(args, out)

    threads = [threading.Thread(target=play, args=(index,), daemon=True) for index in range(len(passes))]
    for index, one in enumerate(passes):
        print(f"\npass {index + 2}, beside the others: {one.name} (output in {paths.display_path(logs[index])})",
              flush=True)
        threads[index].start()
    for thread in threads:
        thread.join()
    for index, one in enumerate(passes):
        print(f"\n==== pass {index + 2}: {one.name}: exit {results.get(index, 1)}", flush=True)
        print(logs[index].read_text(errors="replace"), flush=True)
    return next((code for code in (results.get(index, 1) for index in range(len(passes))) if code), 0)


def main(args: list[str]) -> int:
    before = {kind: server.running for kind, server in stack.servers().items()}
    try:
        side_by_side()  # a bad BUDGETLAB_TEST_WORKERS is one line, before anything starts
        compile_sources()
        stack.up()
        database.prepare()
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    started_here = [kind for kind, server in stack.servers().items() if not server.external and not before[kind]]
    try:
        code = _pytest(args)
        if code == 0:
            passes = [one for one in (second_python_pass(), external_pass()) if one]
            code = run_passes(passes, args) if passes else 0
    finally:
        if started_here:
            stack.down()
            embedded = {kind for kind, server in stack.servers().items() if not server.external}
            # A clone in a private folder (CI's) needed copies under /tmp; they go with the run,
            # unless a stack of the workshop's own was running before and its data is not ours.
            if set(started_here) == embedded:
                try:
                    stack.remove_outside_copies()
                except BudgetlabError as exc:
                    print(f"warning: {exc}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
