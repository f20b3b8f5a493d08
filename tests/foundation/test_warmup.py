"""A lab process that loads the prefork pool has read its parent-death signal once, so its children parse nothing."""

import os
import subprocess
import sys

import pytest

from budgetlab.harness.workers import on_lab_clock

_PROBE = """
import sys
import celery.concurrency.prefork
print("cffi.cparser" in sys.modules)
"""


def _parsed_before_fork(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_master_parses_billiards_cffi_declaration_before_it_forks_a_child():
    """billiard/util.py parses `prctl` with cffi in every child (23-28 ms); read once in the master, children reuse it."""
    pytest.importorskip("cffi", reason="without cffi, billiard uses ctypes and nothing is parsed")
    assert _parsed_before_fork(on_lab_clock(dict(os.environ, BUDGETLAB_CLOCK="0.01"))) == "True"
    # A process the workshop did not start loads nothing of it: a learner's own Celery is left as it is.
    plain = {name: value for name, value in os.environ.items() if not name.startswith("BUDGETLAB_CLOCK")}
    assert _parsed_before_fork(plain) == "False"
