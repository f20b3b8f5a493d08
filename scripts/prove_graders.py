"""Prove a lab's graders: the solution passes, the starter fails, every wrong fix fails, every alternative passes.

Usage: python scripts/prove_graders.py N [N ...]   (prints one line per case; exit 1 if any case disagrees)

Wrong fixes and alternatives are declared in each lab's variants file
(labs.toml's `variants`) as a base tree, labs/ or solutions/, plus a small
patch; each is built into a scratch tree and graded there (see
budgetlab.variants; scripts/variant_patch.py writes the patches).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from budgetlab import labs, targets, variants
from budgetlab.errors import BudgetlabError


def check(number: int, target: targets.Target, fail_fast: bool) -> tuple[int, str]:
    argv = [sys.executable, "-m", "budgetlab.cli_entry", "check", str(number), "--target", target.argument]
    if fail_fast:
        argv.append("--fail-fast")
    result = subprocess.run(argv, capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    return result.returncode, (lines[-1] if lines else result.stderr.strip())


def prove(number: int) -> bool:
    lab = labs.get(number)
    cases = [("solution", targets.resolve("solutions"), 0, False), ("starter", targets.learners(), 1, True)]
    with tempfile.TemporaryDirectory(prefix=f"prove-{lab.slug}-") as scratch:
        for variant in variants.load(lab):
            tree = targets.resolve(variants.build(lab, variant, Path(scratch)))
            cases.append((f"{variant.kind} {variant.name}", tree, variant.expected_exit, variant.expected_exit == 1))
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
    try:
        sys.exit(0 if all([prove(n) for n in numbers]) else 1)
    except BudgetlabError as exc:  # a variants file or patch that does not fit its base
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
