"""Rewrites Python syntax newer than the running interpreter into older syntax the ast module reads.

The audit's rules work on the standard library's AST, which only knows the
syntax of the interpreter running the audit. A code base on Python 3.12 to
3.14 uses type parameters (`def first[T](...)`), `type` aliases, quotes
reused inside f-strings, and `except A, B:` without parentheses. Before a file
that the interpreter rejects is given up on, tree-sitter's Python grammar
(which reads every one of these, whatever runs it) finds those constructs and
they are rewritten in place, keeping every other byte where it was, so line
numbers stay exact. Nothing the rules look at lives in what is rewritten:
type parameters and aliases are blanked, an f-string whose expressions need
3.12 becomes an empty string, and the except clause gains its parentheses.
"""

from __future__ import annotations

from functools import lru_cache

_DEFINITIONS = ("function_definition", "class_definition")


@lru_cache(maxsize=1)
def _parser():
    """A tree-sitter parser for Python, or None when the wheels are not installed."""
    try:
        import tree_sitter
        import tree_sitter_python
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


def available() -> bool:
    """True when tree-sitter and its Python grammar can be imported."""
    return _parser() is not None


def _blank(data: bytes, start: int, end: int, head: bytes = b"") -> bytes:
    """The bytes start:end as spaces (newlines kept), beginning with head."""
    body = bytes(byte if byte in b"\r\n" else 0x20 for byte in data[start:end])
    return head + body[len(head):]


def _reuses_quotes(node, data: bytes) -> bool:
    """True for an f-string whose expressions hold its own quote or a backslash (PEP 701, Python 3.12)."""
    start = node.child(0)
    if start is None or start.type != "string_start":
        return False
    quote = data[start.end_byte - 1 : start.end_byte]
    for child in node.children:
        if child.type == "interpolation":
            text = data[child.start_byte : child.end_byte]
            if quote in text or b"\\" in text or (b"\n" in text and start.end_byte - start.start_byte < 3):
                return True
    return False


def lower(data: bytes) -> bytes | None:
    """The source with newer syntax rewritten, or None when there is nothing to rewrite (or no tree-sitter)."""
    parser = _parser()
    if parser is None:
        return None
    tree = parser.parse(data)
    edits: list[tuple[int, int, bytes]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        kind = node.type
        if kind in _DEFINITIONS:
            parameters = node.child_by_field_name("type_parameters")
            if parameters is not None:
                edits.append((parameters.start_byte, parameters.end_byte, _blank(data, parameters.start_byte, parameters.end_byte)))
        elif kind == "type_alias_statement":
            edits.append((node.start_byte, node.end_byte, _blank(data, node.start_byte, node.end_byte, b"pass")))
            continue
        elif kind == "except_clause":
            values = node.children_by_field_name("value")
            if len(values) >= 2:
                edits.append((values[-1].end_byte, values[-1].end_byte, b")"))
                edits.append((values[0].start_byte, values[0].start_byte, b"("))
        elif kind == "string" and _reuses_quotes(node, data):
            single_line = b"\n" not in data[node.start_byte : node.end_byte]
            replacement = _blank(data, node.start_byte, node.end_byte, b'""' if single_line else b'(""')
            if not single_line:
                replacement = replacement[:-1] + b")"
            edits.append((node.start_byte, node.end_byte, replacement))
            continue
        stack.extend(node.children)
    if not edits:
        return None
    # Applied from the end, so the offsets of edits still to come stay valid.
    result = bytearray(data)
    for start, end, replacement in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        result[start:end] = replacement
    return bytes(result)
