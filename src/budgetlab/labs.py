"""The typed loader of labs/labs.toml, the one file that describes every lab."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.paths import labs_root as repo_root


@dataclass(frozen=True)
class Lab:
    """One lab, as labs/labs.toml declares it."""

    #: Position in the workshop, 1 to 6; `budgetlab run N` takes it.
    number: int
    #: Folder name under labs/, solutions/ and tests/, a Python identifier (lab2_swallowed_limit).
    slug: str
    #: The title shown in lists and on the docs site.
    title: str
    #: One sentence: the failure the lab reproduces.
    summary: str
    #: Files the learner edits, relative to the lab folder.
    files: tuple[str, ...]
    #: Progressive hints, the last the nearest to the answer; never in the lab files.
    hints: tuple[str, ...]
    #: Suggested time for the lab, in minutes.
    timebox: int
    #: The longest hard time limit the lab's tasks run under, in production seconds (Kontor's
    #: default, 900, when none is set); a check running far past it on the lab clock is stuck.
    hard_limit: int = 900

    def starter_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "labs" / self.slug

    def solution_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "solutions" / self.slug

    def tests_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "tests" / self.slug


def metadata_file(root: Path | None = None) -> Path:
    return (root or repo_root()) / "labs" / "labs.toml"


def load(root: Path | None = None) -> list[Lab]:
    """Return every lab in order; a malformed file is a one-line error."""
    path = metadata_file(root)
    try:
        data = tomllib.loads(path.read_text())
        labs = [Lab(number=int(entry["number"]), slug=entry["slug"], title=entry["title"],
                    summary=entry["summary"], files=tuple(entry["files"]), hints=tuple(entry["hints"]),
                    timebox=int(entry["timebox"]), hard_limit=int(entry.get("hard_limit", 900)))
                for entry in data["lab"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise BudgetlabError(f"{path} is unreadable or incomplete: {exc}") from None
    return sorted(labs, key=lambda lab: lab.number)


def get(number: int, root: Path | None = None) -> Lab:
    """Return lab N, or fail with the numbers that exist."""
    labs = load(root)
    for lab in labs:
        if lab.number == number:
            return lab
    raise BudgetlabError(f"there is no lab {number}; the labs are {', '.join(str(lab.number) for lab in labs)}")
