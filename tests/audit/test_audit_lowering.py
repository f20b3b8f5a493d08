"""Newer Python syntax is rewritten into older syntax without moving a line, so every file is audited."""

from __future__ import annotations

import ast

import pytest

from budgetlab.audit import lowering
from budgetlab.audit.sources import Unreadable, parse_python

pytestmark = pytest.mark.skipif(not lowering.available(), reason="tree-sitter wheels not installed")

NEWER = {
    "type parameters (3.12)": "def first[T](items: list[T]) -> T:\n    return items[0]\n\nclass Box[T]:\n    pass\n",
    "type alias (3.12)": "type Ids = list[\n    int,\n]\nx = 1\n",
    "quotes reused in an f-string (3.12)": 'name = f"{row["name"]}"\nx = 1\n',
    "except without parentheses (3.14)": "try:\n    pass\nexcept ValueError, KeyError:\n    x = 1\n",
}


@pytest.mark.parametrize("source", NEWER.values(), ids=NEWER)
def test_newer_syntax_parses_with_lines_in_place(source):
    """Each construct is lowered to something this interpreter reads, with the same number of lines."""
    lowered = lowering.lower(source.encode())
    assert lowered is not None, "nothing was rewritten"
    assert lowered.count(b"\n") == source.count("\n"), "lowering moved lines"
    tree = ast.parse(lowered)
    assert tree.body[-1].end_lineno == source.count("\n"), ast.dump(tree)


def test_parse_python_reads_a_314_except_and_keeps_the_handler():
    """`except A, B:` becomes `except (A, B):`: the handler and its line survive for the rules."""
    source = b"try:\n    go()\nexcept ValueError, KeyError:\n    pass\nexcept Exception:\n    pass\n"
    tree = parse_python(source, "new.py")
    handlers = tree.body[0].handlers
    assert [handler.lineno for handler in handlers] == [3, 5], ast.dump(tree)
    assert type(handlers[0].type) is ast.Tuple, ast.dump(handlers[0])


def test_real_syntax_errors_stay_unreadable():
    """A file no grammar accepts is still reported as unreadable, with the interpreter's reason."""
    with pytest.raises(Unreadable, match=r"cannot parse \(line 1"):
        parse_python(b"def broken(:\n    return 1\n", "broken.py")
