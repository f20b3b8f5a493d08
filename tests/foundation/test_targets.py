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
