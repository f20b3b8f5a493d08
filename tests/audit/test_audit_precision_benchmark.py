"""The precision benchmark's labels are well formed and it names every code base it cannot find."""

from __future__ import annotations

import csv
import importlib.util
import sys
from pathlib import Path

from budgetlab.audit.rules import SELECTABLE

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "audit_precision.py"


def _benchmark():
    spec = importlib.util.spec_from_file_location("audit_precision", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_label_names_a_pinned_tree_a_known_label_and_a_reason():
    """Each row of audit_labels.csv is true/false/debatable with a reason, on a tree the benchmark pins."""
    benchmark = _benchmark()
    trees = {tree.name for tree in benchmark.TREES}
    with benchmark.LABELS.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows, "audit_labels.csv is empty"
    for row in rows:
        where = f"{row['tree']}:{row['path']}:{row['line']}"
        assert row["tree"] in trees, f"{where}: tree not in TREES"
        assert row["label"] in ("true", "false", "debatable"), f"{where}: label {row['label']!r}"
        assert row["reason"].strip(), f"{where}: no reason"
        assert row["code"] in SELECTABLE, f"{where}: code {row['code']!r}"
    # Issue 28: at least eight code bases, each pinned to a full commit.
    assert len(benchmark.TREES) >= 8 and all(len(tree.commit) == 40 for tree in benchmark.TREES)


def test_missing_trees_are_named_with_where_to_get_them(tmp_path, capsys):
    """Given an empty folder, the benchmark lists each missing code base with its URL and commit, and fails."""
    benchmark = _benchmark()
    assert benchmark.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    for tree in benchmark.TREES:
        assert f"missing  {tree.name}: git clone {tree.url}" in out and tree.commit in out, out


def test_a_sample_is_seeded_and_capped():
    """More than 30 findings of a rule are sampled to 30, the same 30 on every run."""
    benchmark = _benchmark()
    keys = [("t", f"f{index}.py", index, "BL003") for index in range(100)]
    first = benchmark.sample(keys)
    assert len(first) == benchmark.SAMPLE and first == benchmark.sample(list(reversed(keys)))


def test_seeded_recall_counts_what_the_tests_require_and_lists_each_miss(monkeypatch):
    """The recall table's seeded findings are the tests' own; an audit that drops one rule's findings misses them."""
    benchmark = _benchmark()
    codes = list(SELECTABLE)
    rows, missed = benchmark.seeded_rows(codes)
    assert not missed and all(row[2] == row[1] != "0" for row in rows), rows
    real = benchmark._audit_module()

    class WithoutBL005:
        @staticmethod
        def audit(paths):
            result = real.audit(paths)
            result.findings[:] = [finding for finding in result.findings if finding.code != "BL005"]
            return result

    monkeypatch.setattr(benchmark, "_audit_module", lambda: WithoutBL005)
    rows, missed = benchmark.seeded_rows(codes)
    assert dict((row[0], row[2:]) for row in rows)["BL005"] == ["0", "0%"], rows
    assert missed and all(key.endswith(":BL005") for key in missed), missed
