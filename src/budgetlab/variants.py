"""A lab's wrong fixes and alternatives: a base tree plus a small patch each, built into a scratch tree for grading.

Each lab's variants file (labs.toml's `variants`, kept with the graders) holds
one [[variant]] table per case:

    [[variant]]
    name = "reraise_without_finalize"    # a Python-identifier-like label, unique in the lab
    kind = "wrong fix"                   # or "alternative", or "wall seam"
    base = "solutions"                   # the tree the patch applies to: labs or solutions
    patch = "wrong_fixes/reraise_without_finalize.patch"   # relative to the variants file
    why = "re-raises the time limit but leaves the job in importing"

A wrong fix must fail the lab's graders and an alternative must pass them. A
wall seam is a fix that would pass in production but uses a way of reading
time the lab clock leaves on wall time (budgetlab.inworker.seams): it must
fail, and its failure must say which line of it runs on which wall clock.
scripts/prove_graders.py checks all three, and scripts/variant_patch.py
writes the patches.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path

from budgetlab import patches
from budgetlab.errors import BudgetlabError
from budgetlab.labs import Lab
from budgetlab.paths import labs_root

KINDS = {"wrong fix": 1, "alternative": 0, "wall seam": 1}
BASES = ("labs", "solutions")
# Left out when a base tree is copied: caches and editor state, never part of a lab.
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


@dataclass(frozen=True)
class Variant:
    """One declared wrong fix or alternative of a lab."""

    #: Unique within the lab; names the scratch tree and the line prove_graders prints.
    name: str
    #: "wrong fix" (the graders must reject it), "alternative" (they must accept it), or "wall seam"
    #: (they must reject it with the note naming its line on a wall clock).
    kind: str
    #: The tree the patch applies to, "labs" or "solutions": whichever gives the smaller patch.
    base: str
    #: The unified diff against the base's lab folder.
    patch: Path
    #: One line: why the graders must reject it, or why it is a fix all the same.
    why: str

    @property
    def expected_exit(self) -> int:
        """The exit code `budgetlab check` must give this variant: 1 for a wrong fix or a wall seam, 0 for an alternative."""
        return KINDS[self.kind]

    def must_say(self, lab: Lab) -> str:
        """A pattern `budgetlab check`'s output must match for this variant ('' for none): a wall seam's note."""
        if self.kind != "wall seam":
            return ""
        return rf"{re.escape(lab.slug)}/[\w/.]+:\d+(, \d+)* .*, which runs on .* wall clock here; "


def variants_file(lab: Lab, root: Path | None = None) -> Path | None:
    return (root or labs_root()) / lab.variants if lab.variants else None


def load(lab: Lab, root: Path | None = None) -> list[Variant]:
    """Return the lab's variants in file order; none when the lab declares no variants file."""
    path = variants_file(lab, root)
    if path is None:
        return []
    try:
        entries = tomllib.loads(path.read_text()).get("variant", [])
        found = [Variant(name=entry["name"], kind=entry["kind"], base=entry["base"],
                         patch=path.parent / entry["patch"], why=entry["why"]) for entry in entries]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise BudgetlabError(f"{path} is unreadable or incomplete: {exc}") from None
    for variant in found:
        if variant.kind not in KINDS or variant.base not in BASES:
            raise BudgetlabError(f"{path}: variant {variant.name!r} needs kind in {sorted(KINDS)} and base in {BASES}")
    names = [variant.name for variant in found]
    if len(set(names)) != len(names):
        raise BudgetlabError(f"{path}: a variant name appears twice")
    return found


def build(lab: Lab, variant: Variant, workdir: Path, root: Path | None = None) -> Path:
    """Copy the variant's base tree under workdir, apply its patch to the lab's folder, and return the tree.

    The tree is laid out like labs/, so `budgetlab check N --target TREE` grades it.
    """
    tree = workdir / variant.name
    shutil.copytree((root or labs_root()) / variant.base, tree, ignore=IGNORED)
    source = str(variant.patch.relative_to(root or labs_root()))
    try:
        text = variant.patch.read_text()
    except OSError as exc:
        raise BudgetlabError(f"{source} is unreadable: {exc.strerror}") from None
    patches.apply(patches.parse(text, source), tree / lab.slug, source)
    return tree


def lab_texts(folder: Path, names: list[str] | None = None) -> dict[str, str]:
    """Return {relative name: text} of a lab folder's source files (notebooks and caches left out)."""
    paths = (folder / name for name in names) if names is not None else folder.rglob("*")
    return {str(path.relative_to(folder)): path.read_text() for path in paths
            if path.is_file() and path.suffix != ".ipynb" and "__pycache__" not in path.parts
            and ".ipynb_checkpoints" not in path.parts and path.suffix != ".pyc"}
