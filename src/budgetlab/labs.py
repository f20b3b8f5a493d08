"""The typed loader of tests/labs.toml, the one file that describes every lab."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from budgetlab.errors import BudgetlabError
from budgetlab.paths import labs_root as repo_root


@dataclass(frozen=True)
class Lab:
    """One lab, as tests/labs.toml declares it."""

    #: Position in the workshop, unique among the labs; `budgetlab run N` takes it.
    number: int
    #: Folder name under labs/, solutions/ and tests/, a Python identifier (lab2_batch_jobs).
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
    #: Files the learner reads but never edits, relative to the lab folder; labs/ and solutions/
    #: hold byte-identical copies (the maintainers' test checks it).
    readonly: tuple[str, ...] = ()
    #: Notebooks the learner runs beside the lab, in labs/ only (solutions/ has none).
    notebooks: tuple[str, ...] = ()
    #: The module that plays the lab live for `budgetlab run N` (presentation only).
    scenario: str | None = None
    #: The module that holds the lab's story: workload, budgets, how to read an ending. The
    #: scenario and the graders both import it.
    story: str | None = None
    #: The learner's page of the lab, relative to the checkout (docs/labs/labN.md).
    page: str | None = None
    #: The instructor's notes on the lab, relative to the checkout.
    instructor_page: str | None = None
    #: Recorded CLI sessions the pages include, relative to the checkout (scripts/transcripts.py writes them).
    transcripts: tuple[str, ...] = ()
    #: The lab's wrong fixes and alternatives, relative to the checkout: a TOML file kept with the
    #: graders, not in labs/, because each entry says why a fix is wrong (budgetlab.variants reads it).
    variants: str | None = None
    #: Words that name the lab's cause or its fix: the lab's page may use them only below
    #: `## After you pass` (tests/docs/test_spoilers.py reads the page's raw markdown).
    giveaways: tuple[str, ...] = ()
    #: The lab's earlier folder names, which named its cause: a learner's tree that still has one
    #: is told once where the lab moved (budgetlab.targets).
    formerly: tuple[str, ...] = ()

    def starter_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "labs" / self.slug

    def solution_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "solutions" / self.slug

    def tests_dir(self, root: Path | None = None) -> Path:
        return (root or repo_root()) / "tests" / self.slug


def metadata_file(root: Path | None = None) -> Path:
    return (root or repo_root()) / "tests" / "labs.toml"


def load(root: Path | None = None) -> list[Lab]:
    """Return every lab in order; a malformed file is a one-line error."""
    path = metadata_file(root)
    try:
        data = tomllib.loads(path.read_text())
        labs = [_lab(entry) for entry in data["lab"]]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
        raise BudgetlabError(f"{path} is unreadable or incomplete: {exc}") from None
    return sorted(labs, key=lambda lab: lab.number)


def _lab(entry: dict) -> Lab:
    unknown = set(entry) - set(Lab.__dataclass_fields__)
    if unknown:
        # A misspelt key would otherwise leave its field at the default without a word.
        raise ValueError(f"lab {entry.get('number')} has unknown keys {sorted(unknown)}")
    lists = {key: tuple(entry.get(key, ())) for key in ("readonly", "notebooks", "transcripts", "giveaways", "formerly")}
    return Lab(number=int(entry["number"]), slug=entry["slug"], title=entry["title"],
               summary=entry["summary"], files=tuple(entry["files"]), hints=tuple(entry["hints"]),
               timebox=int(entry["timebox"]), hard_limit=int(entry.get("hard_limit", 900)), **lists,
               **{key: entry.get(key) for key in ("scenario", "story", "page", "instructor_page", "variants")})


def slug_of(number: int) -> str:
    """Return lab N's folder name as this package's own checkout declares it (for its stories, whatever the roots)."""
    return get(number, Path(__file__).resolve().parents[2]).slug


def by_slug(slug: str, root: Path | None = None) -> Lab | None:
    """Return the lab whose folder is named `slug`, or None when no lab is."""
    return next((lab for lab in load(root) if lab.slug == slug), None)


def get(number: int, root: Path | None = None) -> Lab:
    """Return lab N, or fail with the numbers that exist."""
    labs = load(root)
    for lab in labs:
        if lab.number == number:
            return lab
    raise BudgetlabError(f"there is no lab {number}; the labs are {', '.join(str(lab.number) for lab in labs)}")
