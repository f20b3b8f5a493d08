"""The strict unified-diff writer and applier that the lab variants are stored with."""

import pytest

from budgetlab import patches

BEFORE = {"loop.py": "a = 1\nb = 2\nc = 3\nd = 4\n", "old.py": "gone\n", "tail.sh": "echo one\necho two"}
AFTER = {"loop.py": "a = 1\nb = 20\nc = 3\nd = 4\ne = 5\n", "new.py": "fresh\n", "tail.sh": "echo one\necho 2"}


def write(folder, files):
    for name, text in files.items():
        (folder / name).write_text(text)


def read(folder):
    return {path.name: path.read_text() for path in folder.iterdir()}


def test_a_diff_applied_to_its_base_gives_the_edited_files_back(tmp_path):
    write(tmp_path, BEFORE)
    text = patches.diff(BEFORE, AFTER)
    patches.apply(patches.parse(text), tmp_path)
    assert read(tmp_path) == AFTER


def test_a_file_without_a_final_newline_keeps_that_shape(tmp_path):
    text = patches.diff(BEFORE, AFTER)
    assert patches.NO_NEWLINE in text
    write(tmp_path, BEFORE)
    patches.apply(patches.parse(text), tmp_path)
    assert (tmp_path / "tail.sh").read_text().endswith("echo 2")


def test_a_hunk_that_no_longer_matches_its_base_is_refused(tmp_path):
    text = patches.diff(BEFORE, AFTER)
    write(tmp_path, dict(BEFORE, **{"loop.py": "a = 1\nb = 3\nc = 3\nd = 4\n"}))
    with pytest.raises(patches.PatchError, match="does not match"):
        patches.apply(patches.parse(text, "loop.patch"), tmp_path, "loop.patch")


def test_creating_a_file_that_exists_is_refused(tmp_path):
    write(tmp_path, dict(BEFORE, **{"new.py": "already here\n"}))
    with pytest.raises(patches.PatchError, match="already exists"):
        patches.apply(patches.parse(patches.diff(BEFORE, AFTER)), tmp_path)


@pytest.mark.parametrize("text", ["just words\n", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-only one line\n", ""])
def test_a_malformed_patch_is_a_one_line_error(text):
    with pytest.raises(patches.PatchError) as caught:
        patches.parse(text, "broken.patch")
    assert "\n" not in str(caught.value) and "broken.patch" in str(caught.value)


def test_equal_trees_give_an_empty_diff():
    assert patches.diff(BEFORE, dict(BEFORE)) == ""
