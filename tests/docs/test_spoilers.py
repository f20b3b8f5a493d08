"""No learner page shows a line of a reference solution where a learner reads it without asking for it."""

from __future__ import annotations

import builtins
import difflib
import functools
import keyword
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from docs_support import ROOT

from budgetlab import labs as manifest

# Pages a learner reads while working on a lab; instructor notes and the facilitator guide are exempt.
LEARNER_PAGES = ("index.html", "getting-started/index.html", "glossary/index.html", "cheatsheet/index.html",
                 "labs/*/index.html", "concepts/*/index.html")
# A solution line shorter than this ("raise", "try:", "else:") says nothing about the fix.
SHORTEST_SPOILER = 12
LAB_SLUGS = sorted(path.name for path in (ROOT / "solutions").glob("lab*") if path.is_dir())


def _says_something(code: str) -> bool:
    """Whether a line names anything beyond Python's keywords and builtins (`except Exception:` does not)."""
    return len(code) >= SHORTEST_SPOILER and any(
        not keyword.iskeyword(name) and not hasattr(builtins, name) for name in re.findall(r"[A-Za-z_]\w*", code))


def _code_of(line: str) -> str:
    """Return a line without its trailing comment and surrounding space, '' for a comment or blank line."""
    text = line.strip()
    if not text or text.startswith("#"):
        return ""
    return re.split(r"\s+#\s", text, maxsplit=1)[0].strip()


@functools.cache
def starter_code() -> frozenset[str]:
    """Return every code line of every starter under labs/: what a learner already has is no spoiler."""
    return frozenset(_code_of(line) for path in (ROOT / "labs").rglob("*")
                     if path.is_file() and path.suffix in (".py", ".sh")
                     for line in path.read_text(encoding="utf-8").splitlines())


def solution_lines(slug: str) -> set[str]:
    """Return the code lines solutions/<slug>/ adds or changes against labs/<slug>/, comments and blanks ignored."""
    lines: set[str] = set()
    for solution in sorted((ROOT / "solutions" / slug).rglob("*")):
        if not solution.is_file() or "__pycache__" in solution.parts:
            continue
        starter = ROOT / "labs" / slug / solution.relative_to(ROOT / "solutions" / slug)
        old = starter.read_text(encoding="utf-8").splitlines() if starter.exists() else []
        new = solution.read_text(encoding="utf-8").splitlines()
        for tag, _, _, first, last in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag in ("replace", "insert"):
                for line in new[first:last]:
                    code = _code_of(line)
                    # A line only moved, or shown elsewhere in the starters, is not part of the fix.
                    if _says_something(code) and code not in starter_code():
                        lines.add(code)
    return lines


class VisibleText(HTMLParser):
    """Collects the text of a page's article that shows without a click: closed <details> blocks are left out."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    # Tags that separate words on screen although the HTML may have no space between them.
    BREAKS = {"br", "p", "div", "li", "td", "th", "tr", "pre", "dt", "dd", "summary", "h1", "h2", "h3", "h4", "h5", "h6"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.stack: list[tuple[str, bool]] = []  # (tag, hides its content)
        self.in_article = 0

    def _hidden(self) -> bool:
        # Inside a closed <details>, only its own <summary> shows.
        for index, (_, hides) in enumerate(self.stack):
            if hides and not (index + 1 < len(self.stack) and self.stack[index + 1][0] == "summary"):
                return True
        return False

    def handle_starttag(self, tag, attrs):
        if tag in self.BREAKS:
            self.parts.append(" ")
        if tag in self.VOID:
            return
        if tag == "article":
            self.in_article += 1
        self.stack.append((tag, tag == "details" and "open" not in dict(attrs)))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self.stack:
            if self.stack.pop()[0] == tag:
                break
        if tag == "article":
            self.in_article -= 1

    def handle_data(self, data):
        if self.in_article and not self._hidden():
            self.parts.append(data)


def visible_text(html: str) -> str:
    """Return the text a reader sees on a page without opening anything, whitespace collapsed."""
    parser = VisibleText()
    parser.feed(html)
    return " ".join("".join(parser.parts).split())


# Pages that hold the answers on purpose; a learner opens them after the lab, and site search leaves them out.
ANSWER_PAGES = ("instructors/", "facilitator/")


def linked_from_labs(site: Path) -> set[Path]:
    """Return every page of the site a lab page links to: a learner follows those links while working."""
    found = set()
    for lab in site.glob("labs/*/index.html"):
        # The article only: the navigation links every page of the site.
        article = re.search(r"<article\b.*?</article>", lab.read_text(encoding="utf-8"), flags=re.DOTALL)
        for href in re.findall(r'href="([^"#:?]+/)(?:#[^"]*)?"', article.group(0) if article else ""):
            target = (lab.parent / href / "index.html").resolve()
            if target.is_file() and site.resolve() in target.parents:
                found.add(site / target.relative_to(site.resolve()))
    return found


def learner_pages(site: Path) -> list[Path]:
    """Return the pages a learner reads during a lab: the fixed list plus every page a lab page links."""
    pages = {page for pattern in LEARNER_PAGES for page in site.glob(pattern)} | linked_from_labs(site)
    return sorted(page for page in pages
                  if not page.relative_to(site).as_posix().startswith(ANSWER_PAGES))


def test_visible_text_leaves_out_closed_details_but_keeps_open_ones():
    """Text inside a collapsed block is hidden, its title and an expanded block's body are not."""
    html = (
        "<article><p>story</p>"
        '<details class="success"><summary>Answer: lab 9</summary><pre>except Boom: raise</pre></details>'
        '<details class="note" open><summary>Shown</summary><p>open body</p></details>'
        "<p>after<br>the break</p></article>"
    )
    text = visible_text(html)
    assert "except Boom" not in text, text
    assert "Answer: lab 9" in text and "open body" in text and "after the break" in text, text


def test_solution_lines_ignore_comments_blank_lines_and_unchanged_code():
    """Only the changed code of a solution counts; its comments and the lines it shares with the starter do not."""
    lines = solution_lines("lab2_batch_jobs")
    assert "except SoftTimeLimitExceeded:" in lines, sorted(lines)
    assert not any(line.startswith("#") for line in lines), sorted(lines)
    assert "except Exception:" not in lines, "a line of nothing but keywords and builtins counted as a spoiler"


@pytest.mark.parametrize("slug", LAB_SLUGS)
def test_no_learner_page_shows_a_solution_line_outside_a_collapsed_block(built_site, slug):
    """A learner page shows no line the reference solution adds, unless it sits in a block closed until opened."""
    site = built_site.require()
    spoilers = solution_lines(slug)
    assert spoilers, f"solutions/{slug} changes nothing against labs/{slug}: the test would prove nothing"
    pages = learner_pages(site)
    assert len(pages) >= 10, f"only {len(pages)} learner pages found in the built site"
    found = []
    for page in pages:
        text = visible_text(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site).parent}/: {line}" for line in sorted(spoilers)
                  if " ".join(line.split()) in text]
    assert not found, (
        f"learner pages show lines of solutions/{slug} without a click; move them into a collapsed "
        "`??? success \"Answer: …\"` block or the lab's instructor notes:\n" + "\n".join(found)
    )


# Words every page of this workshop uses; a run of them says nothing about one lab's fix.
COMMON_WORDS = frozenset("""a an the and or of to in on at by for with from as is it its that this what when which
who your you be are was only not no each every one says why comment time limit task's task""".split())


def answer_phrases(hint: str) -> set[str]:
    """Return the four-word runs of a lab's last hint (the nearest to the answer) that name at least three things."""
    words = re.findall(r"[\w'.()=]+", hint)
    return {" ".join(words[i:i + 4]) for i in range(len(words) - 3)
            if sum(word.lower() not in COMMON_WORDS for word in words[i:i + 4]) >= 3}


def test_learner_pages_include_concepts_and_every_page_a_lab_links(built_site):
    """The pages checked for spoilers are the concept pages and every page a lab links, never the answer pages."""
    site = built_site.require()
    pages = {page.relative_to(site).parent.as_posix() for page in learner_pages(site)}
    linked = {page.relative_to(site).parent.as_posix() for page in linked_from_labs(site)}
    assert any(page.startswith("concepts/") for page in pages), sorted(pages)
    assert "glossary" in linked and any(page.startswith("concepts/") for page in linked), sorted(linked)
    assert not any(page.startswith(ANSWER_PAGES) for page in pages), sorted(pages)


@pytest.mark.parametrize("lab", load_labs_toml := __import__("tomllib").loads(
    manifest.metadata_file(ROOT).read_text(encoding="utf-8"))["lab"], ids=lambda lab: f"lab{lab['number']}")
def test_no_learner_page_states_the_last_hint_outside_a_collapsed_block(built_site, lab):
    """No learner page says, where it shows without a click, what the lab's last hint (the nearest to the answer) says."""
    site = built_site.require()
    phrases = answer_phrases(lab["hints"][-1])
    assert phrases, f"lab {lab['number']}'s last hint yields no phrase: the test would prove nothing"
    found = []
    for page in learner_pages(site):
        text = visible_text(page.read_text(encoding="utf-8"))
        found += [f"{page.relative_to(site).parent}/: {phrase!r}" for phrase in sorted(phrases) if phrase in text]
    assert not found, (f"learner pages tell lab {lab['number']}'s answer without a click; collapse it into a block "
                       "marked for after the lab, or move it to the instructor notes:\n" + "\n".join(found))


def test_answer_phrases_find_a_fix_told_openly():
    """The phrase check catches the objective lab 6 once had, which told the fix before the lab."""
    hint = "carry one deadline through a run so each call gets only what is left (timeout=min(per_call, left))"
    text = visible_text("<article><p>carry one deadline through a run of calls</p></article>")
    assert any(phrase in text for phrase in answer_phrases(hint))


def test_instructor_pages_are_left_out_of_the_learners_search(built_site):
    """Site search indexes no instructor page: a learner searching a word never lands on an answer."""
    import json

    index = json.loads((built_site.require() / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = [entry["location"] for entry in index["docs"]]
    assert any(location.startswith("labs/") for location in locations), "the search index holds no lab page"
    indexed = sorted({location.split("#")[0] for location in locations if location.startswith("instructors/")})
    assert not indexed, f"site search finds the instructor pages: {indexed}"


def _words(html: str) -> list[str]:
    """The words of some HTML, tags and entities aside, lower-cased: what a search result shows, compared loosely."""
    import html as entities

    return re.findall(r"[a-z0-9_]+", entities.unescape(re.sub(r"<[^>]+>", " ", html)).lower())


def _holds(words: list[str], run: list[str]) -> bool:
    """Whether `run` appears in `words` as consecutive words."""
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))


# Eight words in a row are a sentence of the block, not a phrase that two texts share by chance.
RUN = 8
# A closed block as the built page has it: pymdownx.details renders `???` as <details> without `open`.
CLOSED_BLOCK = re.compile(r"<details\b(?![^>]*\bopen\b)[^>]*>\s*<summary>.*?</summary>(.*?)</details>", re.S)


def test_site_search_shows_no_hint_and_no_collapsed_answer(built_site):
    """Search finds the pages, not what they fold away: no hint, and no closed block of any page, is in the index."""
    import json

    from budgetlab import labs

    site = built_site.require()
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    indexed = _words(" ".join(f"{entry['title']} {entry['text']}" for entry in index["docs"]))
    assert _holds(indexed, _words("Lab 2: The jobs that never finish")[:3]), "the search index holds no lab page"
    found = [f"lab {lab.number}'s hint {n}" for lab in labs.load(ROOT) for n, hint in enumerate(lab.hints, 1)
             if len(words := _words(hint)) >= RUN and _holds(indexed, words[:RUN])]
    blocks = 0
    pages = {page: page.read_text(encoding="utf-8") for page in sorted(site.rglob("*.html"))}
    # A block that repeats what some page says openly (the story, a concept page's paragraph) folds nothing away.
    shown = [_words(CLOSED_BLOCK.sub(" ", text)) for text in pages.values()]
    for page, text in pages.items():
        for block in CLOSED_BLOCK.findall(text):
            if len(words := _words(block)) >= RUN and not any(_holds(open_words, words[:RUN]) for open_words in shown):
                blocks += 1
                if _holds(indexed, words[:RUN]):
                    found.append(f"{page.relative_to(site)}: a closed block that begins {' '.join(words[:RUN])!r}")
    assert blocks, "the built site has no closed block to look for"
    assert not found, "site search shows what the pages fold away:\n" + "\n".join(found)


# Many learners read the pages as raw markdown (on GitHub, say), where every `???` block shows open. So a lab page keeps
# everything that tells the cause or the fix below this heading, after its tasks and its challenge, and a concept page
# keeps what it shares with a lab's fix below the second.
LAB_ANSWERS = "## After you pass"
CONCEPT_ANSWERS = "## After the labs"
COLLAPSED = re.compile(r'^ *\?\?\?\+? +\w+(?: +"([^"]*)")?', flags=re.MULTILINE)
LABS = load_labs_toml
CONCEPT_PAGES = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs" / "concepts").glob("*.md")) + [
    "docs/cheatsheet.md"]



def above(text: str, heading: str) -> str:
    """Return a page's markdown above `heading` (all of it when the page lacks the heading)."""
    return text.split(f"\n{heading}\n", 1)[0]


def words_of(text: str) -> str:
    """Return text as the runs of words answer_phrases compares, so markdown marks and line breaks do not matter."""
    return " ".join(re.findall(r"[\w'.()=]+", text))


def raw_giveaways(text: str, number: int) -> list[str]:
    """Return the lab's giveaways (labs.toml) and the phrases of its last hint that `text` contains."""
    lab = next(lab for lab in LABS if lab["number"] == number)
    found = [word for word in lab.get("giveaways", ()) if word.lower() in text.lower()]
    return found + sorted(phrase for phrase in answer_phrases(lab["hints"][-1]) if phrase in words_of(text))


def test_the_raw_checks_catch_an_answer_block_in_the_story_and_a_cause_in_an_objective():
    """An answer block above the tasks and an objective that names lab 2's cause are both caught."""
    page = ("## Objectives\n\n- explain why `except Exception` catches Celery's `SoftTimeLimitExceeded`;\n\n"
            '## The story\n\n??? note "After the lab: what happened"\n\n    It was swallowed by a handler.\n\n## Tasks\n\n1. Run it.\n')
    assert COLLAPSED.findall(above(page, LAB_ANSWERS)) == ["After the lab: what happened"]
    assert raw_giveaways(above(page, LAB_ANSWERS), 2) == ["catches Celery's", "swallowed by"]


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: f"lab{lab['number']}")
def test_lab_page_keeps_its_answers_below_after_you_pass(lab):
    """Above `## After you pass` a lab page has no collapsed block, and links neither instructor notes nor benchmarks."""
    text = (ROOT / lab["page"]).read_text(encoding="utf-8")
    assert f"\n{LAB_ANSWERS}\n" in text, f"{lab['page']} has no `{LAB_ANSWERS}` section for its answers"
    story = above(text, LAB_ANSWERS)
    blocks = COLLAPSED.findall(story)
    assert not blocks, (f"{lab['page']} has collapsed blocks above `{LAB_ANSWERS}`, open to anyone who reads the "
                        f"markdown; move them below it: {blocks}")
    links = sorted(set(re.findall(r"\((?:\.\./)+instructors/[^)]*\)|benchmarks/\w+\.py", story)))
    assert not links, f"{lab['page']} points at answers above `{LAB_ANSWERS}`: {links}"


@pytest.mark.parametrize("lab", LABS, ids=lambda lab: f"lab{lab['number']}")
def test_lab_page_names_no_cause_or_fix_above_after_you_pass(lab):
    """Questions, objectives, story, goal, tasks and challenge say nothing that names the lab's cause or its fix."""
    text = above((ROOT / lab["page"]).read_text(encoding="utf-8"), LAB_ANSWERS)
    found = raw_giveaways(text, lab["number"])
    assert not found, (f"{lab['page']} names the lab's cause or fix above `{LAB_ANSWERS}`: {found}; say what the "
                       "learner sees and how to investigate, and keep the answer below it")


@pytest.mark.parametrize("page", CONCEPT_PAGES)
def test_concept_page_keeps_what_answers_a_lab_at_its_end(page):
    """A block for after a lab sits under `## After the labs`; nothing above it names a lab's cause or fix."""
    text = (ROOT / page).read_text(encoding="utf-8")
    top = above(text, CONCEPT_ANSWERS)
    early = [title for title in COLLAPSED.findall(top) if title.startswith("After lab")]
    assert not early, f"{page} has blocks for after a lab above `{CONCEPT_ANSWERS}`: {early}"
    found = [f"lab {lab['number']}: {said!r}" for lab in LABS for said in raw_giveaways(top, lab["number"])]
    assert not found, f"{page} names a lab's cause or fix above `{CONCEPT_ANSWERS}`:\n" + "\n".join(found)
    if CONCEPT_ANSWERS in text:
        tail = text.split(f"\n{CONCEPT_ANSWERS}\n", 1)[1]
        assert not re.search(r"^## ", tail, flags=re.MULTILINE), f"{page}: `{CONCEPT_ANSWERS}` must be its last section"


def test_only_a_closed_block_is_kept_out_of_search():
    """docs/hooks/search_fold.py marks `???` blocks for search to skip, and leaves an open `???+` block searchable."""
    from docs_support import load_module

    hook = load_module("docs/hooks/search_fold.py")
    closed = hook.fold('<details class="tip"><summary>Hint 1 of 3</summary><p>x</p></details>')
    assert closed.startswith('<details data-search-exclude="collapsed" class="tip">'), closed
    opened = '<details class="note" open="open"><summary>Key points</summary></details>'
    assert hook.fold(opened) == opened
