"""Prove a lab's graders: the solution passes, the starter fails, every wrong fix fails, every alternative passes.

Usage: python scripts/prove_graders.py N [N ...]   (prints one line per case; exit 1 if any case disagrees)

Wrong fixes and alternatives live with the graders, as files that replace
the starter's files of the same name:

    tests/<slug>/wrong_fixes/<name>/<file>
    tests/<slug>/alternatives/<name>/<file>
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budgetlab import labs
from budgetlab.paths import labs_root


def check(number: int, target: str, fail_fast: bool) -> tuple[int, str]:
    argv = [sys.executable, "-m", "budgetlab.cli_entry", "check", str(number), "--target", target]
    if fail_fast:
        argv.append("--fail-fast")
    result = subprocess.run(argv, capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return result.returncode, (lines[-1] if lines else result.stderr.strip())


def overlay(lab: labs.Lab, case: Path, workdir: Path) -> Path:
    """Copy labs/ to a scratch tree and lay the case's files over the lab's."""
    tree = workdir / case.name
    shutil.copytree(labs_root() / "labs", tree, ignore=shutil.ignore_patterns("__pycache__"))
    for path in case.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            destination = tree / lab.slug / path.relative_to(case)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
    return tree


def prove(number: int) -> bool:
    lab = labs.get(number)
    cases = [("solution", "solutions", 0, False), ("starter", "labs", 1, True)]
    with tempfile.TemporaryDirectory(prefix=f"prove-{lab.slug}-") as scratch:
        for kind, expected in (("wrong_fixes", 1), ("alternatives", 0)):
            folder = lab.tests_dir() / kind
            for case in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
                cases.append((f"{kind[:-1] if kind == 'alternatives' else 'wrong fix'} {case.name}",
                              str(overlay(lab, case, Path(scratch))), expected, expected == 1))
        ok = True
        for name, target, expected, fail_fast in cases:
            started = time.monotonic()
            code, last = check(number, target, fail_fast)
            agrees = code == expected
            ok &= agrees
            print(f"lab {number} {'ok  ' if agrees else 'FAIL'} {name:<40} exit {code} (want {expected}) "
                  f"{time.monotonic() - started:5.1f}s  {last}", flush=True)
    return ok


if __name__ == "__main__":
    known = [lab.number for lab in labs.load()]
    wrong = [arg for arg in sys.argv[1:] if not arg.isdigit() or int(arg) not in known]
    if wrong:
        print(f"usage: prove_graders.py [LAB ...]; no lab {', '.join(wrong)} (the labs are "
              f"{', '.join(map(str, known))})", file=sys.stderr)
        sys.exit(2)
    numbers = [int(arg) for arg in sys.argv[1:]] or known
    sys.exit(0 if all([prove(n) for n in numbers]) else 1)
