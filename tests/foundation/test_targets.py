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
