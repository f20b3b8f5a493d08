"""The --target value every command and the grading plugin resolve through one function."""

import pytest

from budgetlab import targets
from budgetlab.errors import BudgetlabError
from budgetlab.paths import labs_root


def test_the_named_trees_resolve_to_the_checkout_and_only_labs_is_the_learners():
    assert targets.resolve("labs") == targets.Target("labs", labs_root() / "labs")
    assert targets.resolve("labs").is_learners
    assert not targets.resolve("solutions").is_learners


def test_a_path_to_the_checkouts_labs_folder_is_still_the_learners_code():
    assert targets.resolve(str(labs_root() / "labs") + "/").kind == "labs"


def test_any_other_folder_is_graded_as_a_folder_and_passed_on_by_its_path(tmp_path):
    target = targets.resolve(tmp_path)
    assert (target.kind, target.root, target.argument) == ("folder", tmp_path.resolve(), str(tmp_path.resolve()))
    assert targets.resolve(target.argument) == target


def test_a_missing_folder_is_a_one_line_error(tmp_path):
    with pytest.raises(BudgetlabError, match="neither 'labs', 'solutions' nor a folder"):
        targets.resolve(tmp_path / "nowhere")


def test_a_folder_without_the_lab_says_how_a_target_is_laid_out(tmp_path):
    """A copy of the lab's own folder passed as --target is named as such, not reported as a missing file."""
    from budgetlab import labs

    lab = labs.load()[0]
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / lab.files[0]).write_text("")
    with pytest.raises(BudgetlabError, match=f"holds no {lab.slug}/.*looks like the lab's folder itself"):
        targets.resolve(copy).lab_folder(lab)
    with pytest.raises(BudgetlabError, match=f"holds no {lab.slug}/: --target takes a folder laid out like labs/"):
        targets.resolve(tmp_path).lab_folder(lab)
    (tmp_path / lab.slug).mkdir()
    assert targets.resolve(tmp_path).lab_folder(lab) == (tmp_path / lab.slug).resolve()


def test_only_the_learners_own_missing_file_is_sent_to_reset(tmp_path):
    from budgetlab import labs

    lab = labs.load()[0]
    assert "budgetlab reset" in str(targets.resolve("labs").missing(tmp_path / "x.py", lab))
    assert "budgetlab reset" not in str(targets.resolve(tmp_path).missing(tmp_path / "x.py", lab))


def test_a_tree_that_still_has_a_labs_old_folder_says_where_the_lab_moved(tmp_path):
    """A learner's tree from before a lab's folder was renamed: the old folder is named, with where to copy it."""
    from budgetlab import labs

    lab = next(lab for lab in labs.load() if lab.formerly)
    old = tmp_path / lab.formerly[0]
    old.mkdir()
    target = targets.resolve(tmp_path)
    assert target.moved(lab) is None, "an empty old folder holds no edits and needs no word"
    (old / lab.files[0]).write_text("# my edits\n")
    with pytest.raises(BudgetlabError, match=f"{lab.formerly[0]}/ is lab {lab.number}'s folder under its old name; "
                                             f"the lab now lives in .*{lab.slug}/"):
        target.lab_folder(lab)
    (tmp_path / lab.slug).mkdir()
    assert target.lab_folder(lab) == (tmp_path / lab.slug).resolve()
    assert f"copy your edits there (its imports name {lab.slug})" in target.moved(lab)


def test_a_note_is_said_once(tmp_path, monkeypatch):
    from budgetlab.commands import progress

    monkeypatch.setenv("BUDGETLAB_STATE_DIR", str(tmp_path))
    said = []
    for _ in range(3):
        progress.note_once("moved:2", "lab 2 moved", said.append)
    progress.note_once("moved:3", "lab 3 moved", said.append)
    assert said == ["lab 2 moved", "lab 3 moved"]


def test_the_learners_folder_holds_only_the_labs_under_names_that_tell_nothing():
    """labs/ lists the manifest's lab folders and nothing else; no file there names a lab's former folder."""
    from budgetlab import labs

    declared = labs.load()
    root = labs_root() / "labs"
    assert {path.name for path in root.iterdir() if not path.name.startswith((".", "__"))} == \
        {lab.slug for lab in declared}
    former = {name for lab in declared for name in lab.formerly}
    assert not former & {lab.slug for lab in declared}, "a lab's former name is some lab's name today"
    # A former name's words after "labN_" (e.g. swallowed_limit) named the cause.
    told = sorted(name.split("_", 1)[1] for name in former)
    for path in root.rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            text = path.read_text(errors="replace")
            found = [words for words in told if words in text]
            assert not found, f"{path.relative_to(labs_root())} still says {found}"
