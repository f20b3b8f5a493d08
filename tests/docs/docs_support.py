"""Helpers the docs tests share: paths, a strict MkDocs build, and a copy of the docs to change in a test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from budgetlab import labs as manifest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCREENSHOTS = ROOT / ".budgetlab" / "shots"
# The browser sweeps leave a screenshot of every page for a person to look at; BUDGETLAB_SHOTS=0 (.ci/run's,
# whose clone nobody opens) leaves them out: rendering a whole page for one is a third of a sweep's time.
SHOTS_WANTED = os.environ.get("BUDGETLAB_SHOTS", "1") != "0"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Exit status of scripts/ensure_chromium.sh when it may not install (not root).
CANNOT_INSTALL = 77


@dataclass(frozen=True)
class Build:
    """The outcome of one `mkdocs build --strict`."""

    site: Path
    returncode: int
    log: str

    def require(self) -> Path:
        """Return the site directory, failing the calling test with the build log when the build failed."""
        assert self.returncode == 0, f"mkdocs build --strict failed:\n{self.log[-6000:]}"
        return self.site


def vendor_assets() -> None:
    """Fetch the vendored JavaScript once; without it the strict build fails on purpose."""
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "vendor_docs_assets.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"scripts/vendor_docs_assets.sh failed:\n{result.stdout}{result.stderr}"


def build_site(config_file: Path, site_dir: Path) -> Build:
    """Build a site strictly into site_dir with this interpreter's MkDocs."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config_file), "-d", str(site_dir)],
        cwd=config_file.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return Build(site_dir, result.returncode, result.stdout + result.stderr)


def load_module(relative: str):
    """Load a script or docs hook of the checkout (not a package) by its path relative to the root, e.g. docs/hooks/lab_nav.py."""
    import importlib.util

    path = ROOT / relative
    spec = importlib.util.spec_from_file_location(f"budgetlab_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    # dataclasses needs the module registered while the class bodies run.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def copy_project(destination: Path) -> Path:
    """Copy mkdocs.yml, docs/ and the labs' metadata into destination, for tests that build a changed copy.

    Return the config path. tests/labs.toml comes along because the hints on the lab pages are read from it.
    """
    shutil.copy2(ROOT / "mkdocs.yml", destination / "mkdocs.yml")
    manifest.metadata_file(destination).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(manifest.metadata_file(ROOT), manifest.metadata_file(destination))
    shutil.copytree(DOCS, destination / "docs", ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    return destination / "mkdocs.yml"


