"""Reads a file's bytes and decodes them, turning every failure into a short reason."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

from budgetlab.audit import lowering


class Unreadable(Exception):
    """A file to report as skipped; the message says why in a few words."""


def read_bytes(path: Path) -> bytes:
    """The file's content, or Unreadable with the OS's reason."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from None


def decode_text(data: bytes) -> str:
    """UTF-8 text of a launch file; NUL bytes or bad UTF-8 make it Unreadable."""
    if b"\x00" in data:
        raise Unreadable("cannot parse (binary file)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"cannot parse (not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


def parse_python(data: bytes, filename: str) -> ast.Module:
    """Parse Python source bytes (coding cookie honoured) into an AST, or raise Unreadable."""
    if b"\x00" in data:
        raise Unreadable("cannot parse (binary file)")
    try:
        return ast.parse(data, filename=filename)
    except SyntaxError as exc:
        lowered = _lowered_tree(data, filename, exc)
        if lowered is not None:
            return lowered
        detail = exc.msg or "invalid syntax"
        if "unicode error" in detail or "codec can't decode" in detail:
            detail = detail.replace("(unicode error)", "").strip()
            raise Unreadable(f"cannot parse (not valid in its encoding: {_short(detail)})") from None
        where = f"line {exc.lineno}: " if exc.lineno else ""
        raise Unreadable(f"cannot parse ({where}{_short(detail)})") from None
    except (ValueError, UnicodeDecodeError, LookupError) as exc:
        raise Unreadable(f"cannot parse ({_short(str(exc))})") from None
    except (RecursionError, MemoryError):
        raise Unreadable("cannot parse (nested too deeply)") from None


def _lowered_tree(data: bytes, filename: str, error: SyntaxError) -> ast.Module | None:
    """The AST of the source with syntax newer than this interpreter rewritten, or None."""
    message = error.msg or ""
    if "unicode error" in message or "codec can't decode" in message:
        return None
    try:
        lowered = lowering.lower(data)
        return ast.parse(lowered, filename=filename) if lowered is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def python_lines(data: bytes) -> list[str]:
    """Source lines of a parsed Python file, decoded the way the parser did."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        text = data.decode("utf-8", "replace")
    return text.splitlines()


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 120 else text[:117] + "..."
