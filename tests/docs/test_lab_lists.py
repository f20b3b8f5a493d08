"""Every list of labs on the site and in the README follows tests/labs.toml: generated, never written by hand."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib

import pytest
from docs_support import DOCS, ROOT, build_site, copy_project

from budgetlab import lab_pages
from budgetlab import labs as manifest

GENERATOR = ROOT / "scripts" / "readme_labs.py"
WORDS = "|".join(lab_pages.NUMBER_WORDS[2:])
# "six labs", "Five graded labs", "the first five labs", "7 labs", "five failures": a count someone typed.
HAND_COUNT = re.compile(rf"\b(?:{WORDS}|\d+) (?:graded |real )?(?:labs|failures|failure shapes)\b(?! out of)",
                        re.IGNORECASE)


def scratch_checkout(tmp_path, keep: int):
    """Copy README.md, the docs and a labs.toml cut down to its first `keep` labs into tmp_path."""
    config = copy_project(tmp_path)
    shutil.copy2(ROOT / "README.md", tmp_path / "README.md")
    text = manifest.metadata_file(ROOT).read_text(encoding="utf-8")
    header, *tables = re.split(r"(?m)^\[\[lab\]\]\n", text)
    manifest.metadata_file(tmp_path).write_text(header + "".join(f"[[lab]]\n{t}" for t in tables[:keep]),
                                                 encoding="utf-8")
    return config


def test_readme_is_current():
    """README.md's count, table and transcript are what scripts/readme_labs.py writes from labs.toml today."""
    result = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"README.md is stale: {result.stderr.strip()} (run `make readme`)"


def test_a_lab_fewer_in_the_manifest_changes_every_list(tmp_path):
    """With one lab fewer in a scratch labs.toml, the README and every list the hook renders shrink with it."""
    labs = tomllib.loads(manifest.metadata_file(ROOT).read_text(encoding="utf-8"))["lab"]
    keep = len(labs) - 1
    scratch_checkout(tmp_path, keep)
    stale = subprocess.run([sys.executable, str(GENERATOR), "--check", "--root", str(tmp_path)],
                           capture_output=True, text=True, check=False)
    assert stale.returncode == 1, "the README stayed current although the manifest lost a lab"
    subprocess.run([sys.executable, str(GENERATOR), "--root", str(tmp_path)], check=True, capture_output=True)
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    count = lab_pages.count_word(keep).capitalize()
    assert f"<!-- labs: Count -->{count}<!-- /labs -->" in readme, "the README's count did not follow the manifest"
    assert len(re.findall(r"(?m)^\| \d+ \| ", readme)) == keep, "the README's table did not follow the manifest"
    listed = re.findall(r"(?m)^(\d+) {2,}\S", readme)
    assert len(listed) == keep, f"the README's `budgetlab list` shows {len(listed)} labs for {keep}"
    scratch = lab_pages.load(tmp_path)
    assert len(scratch) == keep
    for name in ("map", "table", "agenda", "self-paced", "discussion", "diagram"):
        rendered = lab_pages.render(name, scratch, "index.md")
        last = labs[-1]
        assert f"{last['number']} · {last['title']}" not in rendered and f"lab {last['number']}]" not in rendered \
            and f"Lab {last['number']}\n" not in rendered, f"the {name} still lists lab {last['number']}"


def test_a_lab_page_without_its_fields_fails_the_strict_build(tmp_path):
    """A lab whose page lacks the front matter the lists need stops the build instead of leaving a list short."""
    config = scratch_checkout(tmp_path, 99)
    page = tmp_path / "docs" / "labs" / "lab1.md"
    page.write_text(re.sub(r"(?m)^symptom: .*\n", "", page.read_text(encoding="utf-8"), count=1), encoding="utf-8")
    result = build_site(config, tmp_path / "site")
    assert result.returncode != 0, "a lab page without its symptom passed the strict build"
    assert "symptom" in result.log, f"the build failed for another reason:\n{result.log[-3000:]}"


@pytest.mark.parametrize("path", ["README.md", *sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md"))])
def test_no_page_counts_labs_by_hand(path):
    """No page says "six labs" or "five failures": a count of labs comes from the `<!-- labs: count -->` marker."""
    text = (ROOT / path).read_text(encoding="utf-8")
    text = re.sub(r"<!-- labs: [\w-]+ -->.*?<!-- /labs -->", "", text, flags=re.DOTALL)
    found = [match.group(0) for match in HAND_COUNT.finditer(text)]
    assert not found, f"{path} counts labs by hand: {found}; write <!-- labs: count --> instead"


def test_the_home_pages_needs_place_every_lab_once():
    """Each lab page names one need, and the home page's need lists, rendered from the pages, hold every lab once."""
    labs = lab_pages.load(ROOT)
    placed = [int(number) for need in lab_pages.NEEDS
              for number in re.findall(r"\[(\d+)\]\(labs/lab\d+\.md\)", lab_pages.render(f"need-{need}", labs, "index.md"))]
    assert sorted(placed) == [entry.lab.number for entry in labs], placed
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    assert all(f"<!-- labs: need-{need} -->" in home for need in lab_pages.NEEDS), "the home page lost a need's list"


def test_a_lab_page_with_an_unknown_need_is_a_one_line_error(tmp_path):
    scratch_checkout(tmp_path, 99)
    page = tmp_path / "docs" / "labs" / "lab1.md"
    page.write_text(re.sub(r'(?m)^need: .*$', 'need: "speed"', page.read_text(encoding="utf-8"), count=1),
                    encoding="utf-8")
    from budgetlab.errors import BudgetlabError

    with pytest.raises(BudgetlabError, match="need 'speed' is none of"):
        lab_pages.load(tmp_path)


def test_the_readmes_first_check_is_its_recorded_transcript(tmp_path):
    """The README's sample `check` is the head of a recorded transcript: a new recording makes the README stale."""
    scratch_checkout(tmp_path, len(tomllib.loads(manifest.metadata_file(ROOT).read_text(encoding="utf-8"))["lab"]))
    name = re.search(r"<!-- transcript: ([\w-]+) \d+ -->", (ROOT / "README.md").read_text(encoding="utf-8")).group(1)
    recorded = tmp_path / "docs" / "transcripts" / f"{name}.txt"
    recorded.write_text(recorded.read_text(encoding="utf-8").replace(" against labs/", " against my labs/", 1),
                        encoding="utf-8")
    stale = subprocess.run([sys.executable, str(GENERATOR), "--check", "--root", str(tmp_path)],
                           capture_output=True, text=True, check=False)
    assert stale.returncode == 1, "the README's sample check did not follow its transcript"
