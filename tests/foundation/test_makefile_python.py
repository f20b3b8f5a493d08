"""`make workshop` takes the newest Python the workshop supports, and without one says in one line what to install."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlab import advice

ROOT = Path(__file__).resolve().parents[2]
PYENV = Path.home() / ".pyenv" / "versions"
# What the Makefile's variables run besides Python.
TOOLS = ("sh", "bash", "cat", "sha1sum", "cut", "rm", "test", "echo", "env")


def interpreter(minor: int) -> Path | None:
    """A real interpreter of Python 3.minor on this machine, or None."""
    found = sorted(PYENV.glob(f"3.{minor}.*/bin/python3.{minor}"))
    if found:
        return found[-1]
    on_path = shutil.which(f"python3.{minor}")
    return Path(on_path) if on_path else None


def only(tmp_path: Path, pythons: dict[str, Path]) -> str:
    """A PATH that holds the Makefile's tools and exactly these Pythons, under these names."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for tool in TOOLS:
        where = shutil.which(tool)
        if where:
            (folder / tool).symlink_to(where)
    for name, target in pythons.items():
        (folder / name).symlink_to(target)
    return str(folder)


def make(path: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "MAKEFLAGS", "MAKELEVEL")}
    env["PATH"] = path
    return subprocess.run([shutil.which("make"), "--no-print-directory", "-C", str(ROOT), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def chosen(path: str) -> str:
    result = make(path, "--eval", "show-python: ; @echo '[$(PYTHON)]'", "show-python")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_newest_supported_python_is_chosen_and_an_older_one_is_never_refused_for_a_newer(tmp_path):
    """With 3.13 and 3.11 on PATH (and a python3 that is 3.10), make takes python3.13."""
    newest, oldest, too_old = interpreter(advice.NEWEST[1] - 1), interpreter(advice.OLDEST[1]), interpreter(10)
    if not (newest and oldest and too_old):
        pytest.skip("needs Python 3.10, 3.11 and 3.13 side by side (pyenv)")
    path = only(tmp_path, {f"python3.{advice.OLDEST[1]}": oldest, f"python3.{advice.NEWEST[1] - 1}": newest,
                           "python3": too_old})
    assert chosen(path) == f"[python3.{advice.NEWEST[1] - 1}]"


def test_without_a_supported_python_make_says_what_to_install_in_one_line(tmp_path):
    """Only a Python 3.10 on PATH: make venv stops with exit 2 and the advice line, and makes no .venv."""
    too_old = interpreter(10)
    if not too_old:
        pytest.skip("needs a Python 3.10 (pyenv)")
    path = only(tmp_path, {"python3": too_old, "python3.10": too_old})
    assert chosen(path) == "[]"
    # A stamp no checkout has, so make runs the recipe without touching this checkout's .venv.
    result = make(path, "--eval", "check-python: ; $(require_python)", "check-python")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("make")]
    assert lines == ["error: " + advice.missing("python")], result.stderr


def test_a_python_named_with_python_that_is_unsupported_is_refused_by_name(tmp_path):
    too_old = interpreter(10)
    if not too_old:
        pytest.skip("needs a Python 3.10 (pyenv)")
    path = only(tmp_path, {"python3": Path(sys.executable)})
    result = make(path, f"PYTHON={too_old}", "--eval", "check-python: ; $(require_python)", "check-python")
    assert result.returncode == 2
    assert f"error: PYTHON={too_old} is not a Python the workshop runs on" in result.stderr
    assert "error: " + advice.missing("python") in result.stderr
