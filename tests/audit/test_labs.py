"""The audit against the workshop itself: each pristine lab shows its lab's rule, each solution is clean."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from budgetlab import labs
from budgetlab import labs as manifest
from budgetlab.audit import RULES, audit

ROOT = Path(__file__).resolve().parents[2]
# The labs the rules name: each rule's lab shows it.
LABS = sorted({rule.lab for rule in RULES.values() if rule.lab is not None})
# Every lab of the manifest, with a rule of its own or not: its solution is clean.
ALL_LABS = [lab.number for lab in labs.load(ROOT)]


def _declared_files(slug: str) -> list[str]:
    """The files tests/labs.toml lists for a lab, or none when it does not list the lab."""
    try:
        data = tomllib.loads(manifest.metadata_file(ROOT).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return []
    for entry in data.get("lab", []):
        if entry.get("slug") == slug:
            return list(entry.get("files", []))
    return []


def _lab_pair(number: int) -> tuple[Path, Path] | None:
    """labs/labN_* and solutions/labN_* when both exist with every file labs.toml lists, else None.

    The labs are written in parallel with the audit: a lab whose files are not
    all in place yet is skipped, not failed.
    """
    for lab in sorted((ROOT / "labs").glob(f"lab{number}_*")):
        solution = ROOT / "solutions" / lab.name
        if not (lab.is_dir() and solution.is_dir()):
            continue
        files = _declared_files(lab.name)
        if all((lab / name).is_file() and (solution / name).is_file() for name in files):
            return lab, solution
    return None


def _describe(findings) -> str:
    return "\n".join(f"{f.path}:{f.line}:{f.column} {f.code} {f.message}" for f in findings) or "(none)"


@pytest.mark.parametrize("number", LABS, ids=lambda number: f"lab{number}")
def test_pristine_lab_shows_its_rule(number):
    """Auditing labs/labN_* finds at least one BL00N: the planted bug is one the audit can see."""
    pair = _lab_pair(number)
    if pair is None:
        pytest.skip(f"labs/lab{number}_* and solutions/lab{number}_* are not both complete yet")
    lab, _ = pair
    code = next(code for code, rule in RULES.items() if rule.lab == number)
    result = audit([str(lab)])
    assert any(finding.code == code for finding in result.findings), (
        f"the audit of {lab.relative_to(ROOT)} does not find {code}; it found:\n{_describe(result.findings)}"
    )
    assert not result.skipped, f"lab files the audit could not read: {result.skipped}"


@pytest.mark.parametrize("number", ALL_LABS, ids=lambda number: f"lab{number}")
def test_solution_is_clean(number):
    """The audit finds nothing in the lab's solution."""
    pair = _lab_pair(number)
    if pair is None:
        pytest.skip(f"labs/lab{number}_* and solutions/lab{number}_* are not both complete yet")
    _, solution = pair
    result = audit([str(solution)])
    assert not result.findings, f"the audit reports the solution {solution.relative_to(ROOT)}:\n{_describe(result.findings)}"
    assert not result.skipped, f"solution files the audit could not read: {result.skipped}"


def test_all_solutions_together_are_clean():
    """Audited as one tree, no lab's settings reach another lab's tasks: each worker loads its own settings module."""
    if not all(_lab_pair(number) for number in LABS):
        pytest.skip("not every lab has its solution yet")
    result = audit([str(ROOT / "solutions")])
    assert not result.findings, f"the audit reports solutions/:\n{_describe(result.findings)}"
