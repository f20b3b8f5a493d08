"""The maintainers' check of the lab set, in the spirit of rustlings' `dev check`."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from budgetlab import integrity, labs
from budgetlab.paths import repo_root

ROOT = repo_root()
LABS = labs.load(ROOT)


def lab_files(tree: str, lab: labs.Lab) -> set[str]:
    folder = ROOT / tree / lab.slug
    return {str(p.relative_to(folder)) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and ".ipynb_checkpoints" not in p.parts
            and not p.name.endswith(".ipynb")}


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.slug)
def test_lab_is_complete(lab):
    """Each lab has its starter, solution and graders, the same file names in labs/ and solutions/, and TODOs."""
    assert lab.starter_dir(ROOT).is_dir(), f"labs/{lab.slug} is missing"
    assert lab.solution_dir(ROOT).is_dir(), f"solutions/{lab.slug} is missing"
    assert list(lab.tests_dir(ROOT).glob("test_*.py")), f"tests/{lab.slug} has no graders"
    assert lab_files("labs", lab) == lab_files("solutions", lab), "labs/ and solutions/ differ in file names"
    for name in lab.files:
        text = (lab.starter_dir(ROOT) / name).read_text()
        assert "TODO" in text, f"labs/{lab.slug}/{name} has no TODO marker"


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.slug)
def test_hints_live_only_in_the_metadata(lab):
    """At least three hints, and no hint's text appears in the lab's files."""
    assert len(lab.hints) >= 3
    for path in lab.starter_dir(ROOT).rglob("*"):
        if path.is_file() and path.suffix in (".py", ".sh"):
            text = path.read_text()
            for hint in lab.hints:
                assert hint[:60] not in text, f"{path.name} contains a hint"


def test_grader_manifest_is_current():
    """tests/MANIFEST.json matches the graders (run integrity.write() after changing one)."""
    assert integrity.modified(ROOT) == [], "refresh it: python -c 'from budgetlab import integrity; integrity.write()'"


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.slug)
def test_graders_prove_themselves(lab):
    """The solution passes, the starter fails, every wrong fix fails and every alternative passes."""
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "prove_graders.py"), str(lab.number)],
                            capture_output=True, text=True, timeout=1200)
    print(result.stdout)
    disagreements = [line for line in result.stdout.splitlines() if " FAIL " in line]
    assert result.returncode == 0, "\n".join(disagreements) or result.stderr


@pytest.mark.external
@pytest.mark.parametrize("lab", LABS, ids=lambda lab: lab.slug)
def test_solution_passes_and_starter_fails_on_these_servers(lab):
    """On whichever servers this run uses, check N passes on solutions/ and fails on labs/."""
    def check(target):
        return subprocess.run([sys.executable, "-m", "budgetlab.cli_entry", "check", str(lab.number), "--target", target],
                              capture_output=True, text=True, timeout=600)
    solved = check("solutions")
    assert solved.returncode == 0, solved.stdout[-2000:] + solved.stderr
    starter = check("labs")
    assert starter.returncode == 1, starter.stdout[-2000:] + starter.stderr


def test_every_cli_command_is_documented():
    """Each CLI command appears in the docs."""
    import typer.main

    from budgetlab.cli import app

    docs = " ".join(p.read_text() for p in (ROOT / "docs").rglob("*.md"))
    group = typer.main.get_command(app)
    names = [f"budgetlab {name}" for name in group.commands]
    names += [f"budgetlab stack {name}" for name in group.commands["stack"].commands]
    missing = [name for name in names if name not in docs]
    assert not missing, f"not mentioned in docs/: {missing}"


def test_lab_files_have_a_one_sentence_docstring():
    """Every Python module in labs/ and solutions/ opens with a docstring."""
    for tree in ("labs", "solutions"):
        for path in (ROOT / tree).rglob("*.py"):
            if path.name == "__init__.py" and not path.read_text().strip():
                continue
            assert re.match(r'\s*(#.*\n)*\s*"""', path.read_text()), f"{path.relative_to(ROOT)} has no module docstring"
