"""Whose code a command plays or grades, resolved once at the edge: labs/, solutions/, or a folder laid out like labs/."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.paths import display_path, labs_root

#: The two trees the checkout ships; anything else must be a folder.
NAMED = ("labs", "solutions")


@dataclass(frozen=True)
class Target:
    """A tree of lab packages (lab1_worker_container/, ...) to run or grade."""

    #: "labs" (the learner's own code), "solutions", or "folder" (e.g. a variant built in a scratch tree).
    kind: str
    #: The absolute path of the tree; it goes on sys.path, so its lab packages import by their slugs.
    root: Path

    @property
    def is_learners(self) -> bool:
        """True for labs/: only the learner's own code counts as an attempt, for progress and the room board."""
        return self.kind == "labs"

    @property
    def argument(self) -> str:
        """The --target value that resolves to this target again, for a subprocess."""
        return self.kind if self.kind in NAMED else str(self.root)

    def lab_dir(self, slug: str) -> Path:
        return self.root / slug

    def lab_folder(self, lab) -> Path:
        """The lab's package in this tree; a one-line error that says what to do when it is not there."""
        folder = self.lab_dir(lab.slug)
        if folder.is_dir():
            return folder
        if moved := self.moved(lab):
            raise BudgetlabError(moved)
        if self.kind != "folder":
            raise self.missing(folder, lab)
        # The usual slip: a copy of the lab's own folder passed instead of the folder that holds it.
        itself = any((self.root / name).exists() for name in lab.files)
        raise BudgetlabError(f"{display_path(self.root)} holds no {lab.slug}/: --target takes a folder laid out like "
                             f"labs/, with {lab.slug}/ inside"
                             + (" (this one looks like the lab's folder itself; pass the folder above it)" if itself else ""))

    def moved(self, lab) -> str | None:
        """What to do when this tree still holds the lab's files under an earlier folder name, or None."""
        for name in lab.formerly:
            old = self.root / name
            if any((old / file).is_file() for file in lab.files):
                return (f"{display_path(old)}/ is lab {lab.number}'s folder under its old name; the lab now lives in "
                        f"{display_path(self.lab_dir(lab.slug))}/, the only one graded or run: copy your edits there "
                        f"(its imports name {lab.slug}), then delete the old folder")
        return None

    def missing(self, path: Path, lab) -> BudgetlabError:
        """The error for a lab file that is not there: the learner's own can be restored, another tree's cannot."""
        if self.is_learners:
            return BudgetlabError(f"{display_path(path)} is missing; restore it with 'budgetlab reset {lab.number}' "
                                  "or from git")
        return BudgetlabError(f"{display_path(path)} is missing from the tree being graded")


def resolve(value: str | Path) -> Target:
    """Turn a --target value into a Target; anything but labs, solutions or an existing folder is a one-line error."""
    if str(value) in NAMED:
        return Target(str(value), labs_root() / str(value))
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise BudgetlabError(f"target {str(value)!r} is neither 'labs', 'solutions' nor a folder")
    # `--target labs/` or a full path to the checkout's labs/ is still the learner's own code.
    for name in NAMED:
        if path == (labs_root() / name).resolve():
            return Target(name, path)
    return Target("folder", path)


def learners() -> Target:
    """The learner's own tree, labs/."""
    return resolve("labs")
