"""No test module or script keeps its own list of labs: every one reads tests/labs.toml, so a new lab is covered everywhere."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from budgetlab import labs
from budgetlab.paths import repo_root

ROOT = repo_root()
# The lab's own graders (tests/<slug>/) may name their lab; everything else reads the manifest.
# Fixtures (the audit's sample sources, a sample lab) are data, some not even valid Python.
DATA_FOLDERS = {"fixtures", "sample"}
OWN_FOLDERS = {lab.slug for lab in labs.load(ROOT)}
# Names that say a loop or a list is about labs.
LAB_WORDS = ("lab", "number")


def modules() -> list[Path]:
    found = []
    for folder in ("tests", "scripts", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if not (folder == "tests" and len(parts) > 1 and parts[1] in OWN_FOLDERS) and not DATA_FOLDERS & set(parts):
                found.append(path)
    return found


def _literal_numbers(node: ast.AST, pairs: bool = True) -> list[int] | None:
    """The ints a range() of literals or a literal tuple, list or set holds (with `pairs`, a pair's first item counts); else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        if node.args and all(isinstance(arg, ast.Constant) and isinstance(arg.value, int) for arg in node.args):
            return list(range(*(arg.value for arg in node.args)))
        return None
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
        numbers = []
        for item in node.elts:
            if pairs and isinstance(item, ast.Tuple) and item.elts:
                item = item.elts[0]
            if not (isinstance(item, ast.Constant) and type(item.value) is int):
                return None
            numbers.append(item.value)
        return numbers
    return None


def _names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [name.strip() for name in node.value.split(",")]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [name for item in node.elts for name in _names(item)]
    return []


def _about_labs(names: list[str]) -> bool:
    return any(word in name.lower() for name in names for word in LAB_WORDS)


def _makes_lab_things(text: str) -> bool:
    """Whether an expression builds something named after a lab (f"lab{n}"), not merely calls budgetlab."""
    return re.search(r"\blab", text, flags=re.IGNORECASE) is not None


def hand_written_lab_lists(source: str) -> list[tuple[int, str]]:
    """Return (line, what) for each list of lab numbers written out in a module's source.

    Caught: a parametrize over literal numbers or a range() of them; a loop
    whose variable names a lab or number over such a literal, or a
    comprehension over one that makes something about a lab; a name about
    labs bound to one.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "parametrize" and len(node.args) >= 2:
            if _literal_numbers(node.args[1]) is not None:
                found.append((node.lineno, f"parametrize({ast.unparse(node.args[0])}, {ast.unparse(node.args[1])})"))
        elif isinstance(node, ast.For) and _about_labs(_names(node.target)):
            if _literal_numbers(node.iter) is not None:
                found.append((node.iter.lineno, f"for {ast.unparse(node.target)} in {ast.unparse(node.iter)[:60]}"))
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            made = ast.unparse(node.key if isinstance(node, ast.DictComp) else node.elt)
            for loop in node.generators:
                if _literal_numbers(loop.iter) is not None and (_about_labs(_names(loop.target))
                                                                or _makes_lab_things(made)):
                    found.append((loop.iter.lineno, f"for {ast.unparse(loop.target)} in {ast.unparse(loop.iter)[:60]}"))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            # A whole list bound to one name; unpacking (LEARNERS, LABS = 100, 5) binds counts, not a list.
            targets = [t for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                       if isinstance(t, ast.Name)]
            if targets and node.value is not None and _about_labs([t.id for t in targets]):
                if _literal_numbers(node.value, pairs=False) is not None:
                    found.append((node.lineno, f"{ast.unparse(targets[0])} = {ast.unparse(node.value)[:60]}"))
    return found


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_module_names_the_labs_itself(path):
    """A list of labs comes from labs.load(); one written by hand misses the next lab without a word."""
    found = hand_written_lab_lists(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(ROOT)} lists labs by hand; read them with budgetlab.labs.load():\n"
                       + "\n".join(f"  line {line}: {what}" for line, what in found))


@pytest.mark.parametrize("source", [
    '@pytest.mark.parametrize("number", range(1, 8))\ndef test_x(number): pass\n',
    '@pytest.mark.parametrize("path", [1, 2, 3])\ndef test_x(path): pass\n',
    'entries = [f"lab{number}" for number in (1, 2, 3, 4, 5, 6, 7)]\n',
    'for number, masks in ((1, "a"), (2, "b")):\n    pass\n',
    'ids = [f"lab{n}" for n in range(1, 7)]\n',
    'LAB_NUMBERS = (1, 2)\n',
], ids=["parametrize-range", "parametrize-list", "comprehension", "pairs", "lab-ids", "assignment"])
def test_a_hand_written_lab_list_is_caught(source):
    """Each shape the suite and scripts have used for a lab list is found."""
    assert hand_written_lab_lists(source), f"not caught:\n{source}"


def test_lists_read_from_the_manifest_and_other_numbers_pass():
    """Reading labs.toml, and numbers that are not labs (retries, sizes), are not reported."""
    source = ("LAB_NUMBERS = [lab.number for lab in labs.load()]\n"
              "for attempt in range(3):\n    pass\n"
              "sizes = (10, 100, 1000)\n"
              "LEARNERS, LABS = 100, 5\n"
              'LABS = [(1, "The limit nobody chose"), (2, "The signal your loop already caught")]\n'
              "warm = [budgetlab(root) for _ in range(3)]\n"
              '@pytest.mark.parametrize("lab", LABS)\ndef test_x(lab): pass\n')
    assert hand_written_lab_lists(source) == []
