"""The clock seams the lab clock leaves on wall time: one registry, for the lab-clock page and for a failed check's note.

`labtime`, `redistime` and `servertime` put every way of reading and waiting
on time they know onto the lab clock. What they cannot reach is registered
here, each with how to spot it in a source line and what runs on the lab
clock instead. The lab-clock page lists the registry (docs/hooks/wall_seams.py),
and when a check fails while the learner's lab files use one of these, the
symptom says so, with file and line (`note`, called by the grading plugin):
a fix that fails because of the workshop's clock is told so, never blamed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: Where a seam is looked for: inside a Python string literal (SQL, Lua), in Python code
#: (strings and comments blanked out), or on a shell script's line.
STRING, CODE, SHELL = "string", "code", "shell"


@dataclass(frozen=True)
class Seam:
    """One way of reading or waiting on time that stays on a wall clock in a lab process."""

    #: As the lab-clock page lists it.
    name: str
    #: Which texts of a lab file `pattern` is matched against: STRING, CODE, SHELL.
    where: tuple[str, ...]
    #: A regular expression (case-insensitive) whose group "seam" is what the note names.
    pattern: str
    #: The note's verb phrase, with {seam} for what was found: "reads {seam}".
    does: str
    #: Whose wall clock it runs on: "the database's wall clock".
    clock: str
    #: What does the same on the lab clock.
    instead: str
    #: For a seam a line alone cannot tell: returns (line, seam text) for a file's source.
    finder: Callable[[str], list[tuple[int, str]]] | None = None


_SQL_KEYWORDS = r"CURRENT_TIMESTAMP|CURRENT_TIME|CURRENT_DATE|LOCALTIMESTAMP|LOCALTIME"
_DATABASE = "the database's wall clock"
_REDIS = "Redis's wall clock"
_MACHINE = "the machine's wall clock"


def _bare_lock_waits(source: str) -> list[tuple[int, str]]:
    """Find `x.acquire(..., timeout)` on a name or attribute bound to threading.Lock() or _thread.allocate_lock()."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []

    def called(node) -> str:
        func = node.func if isinstance(node, ast.Call) else None
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""

    locks = {ast.unparse(target) for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
             and node.value is not None and called(node.value) in ("Lock", "allocate_lock")
             for target in (node.targets if isinstance(node, ast.Assign) else [node.target])}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "acquire"
                and ast.unparse(node.func.value) in locks
                and (len(node.args) >= 2 or any(keyword.arg == "timeout" for keyword in node.keywords))):
            found.append((node.lineno, "Lock.acquire(timeout=...)"))
    return found


#: Every seam the lab clock does not cover, in the order the page lists them.
SEAMS: tuple[Seam, ...] = (
    Seam("SQL's date/time input literals 'now', 'today', 'tomorrow' and 'yesterday'", (STRING,),
         r"'\s*(?P<seam>now|today|tomorrow|yesterday)\s*'", "reads the '{seam}' literal", _DATABASE,
         "now() runs on the lab clock"),
    Seam("SQL's time keywords (CURRENT_TIMESTAMP, CURRENT_DATE, ...) inside a function body written between $$",
         (STRING,), rf"\$\w*\$[^$]*?\b(?P<seam>{_SQL_KEYWORDS})\b", "reads {seam} inside a function body", _DATABASE,
         "now() there runs on the lab clock"),
    Seam("pg_catalog's own now(), clock_timestamp(), pg_sleep() and friends, named with their schema", (STRING,),
         r"\bpg_catalog\s*\.\s*(?P<seam>now|transaction_timestamp|statement_timestamp|clock_timestamp|timeofday"
         r"|age|pg_sleep|pg_sleep_for|pg_sleep_until|pg_stat_activity)\b", "names pg_catalog.{seam}", _DATABASE,
         "the same name without pg_catalog. runs on the lab clock"),
    Seam("PostgreSQL's own time-outs: statement_timeout, lock_timeout, idle_in_transaction_session_timeout, "
         "idle_session_timeout, transaction_timeout", (STRING,),
         r"\b(?P<seam>statement_timeout|lock_timeout|idle_in_transaction_session_timeout|idle_session_timeout"
         r"|transaction_timeout)\b", "sets {seam}", _DATABASE,
         "a time limit on the task, or an elapsed time.monotonic() the code checks, runs on the lab clock"),
    Seam("timestamps of PostgreSQL's statistics and locks other than pg_stat_activity's (last_vacuum, "
         "last_seq_scan, stats_reset, pg_locks' waitstart, ...) and the server's start and reload times", (STRING,),
         r"\b(?P<seam>last_seq_scan|last_idx_scan|last_vacuum|last_autovacuum|last_analyze|last_autoanalyze"
         r"|stats_reset|waitstart|pg_postmaster_start_time|pg_conf_load_time)\b", "reads {seam}", _DATABASE,
         "now() and pg_stat_activity's timestamps run on the lab clock"),
    Seam("Redis's idle times: XAUTOCLAIM's and XCLAIM's min-idle-time, XPENDING's IDLE, OBJECT IDLETIME",
         (CODE, STRING), r"\b(?P<seam>xautoclaim|xclaim|xpending_range|xpending|object_idletime|idletime)\b",
         "uses {seam}", _REDIS, "a timestamp the code writes with time.time() runs on the lab clock"),
    Seam("Redis functions (FUNCTION LOAD, FCALL)", (CODE, STRING),
         r"\b(?P<seam>fcall_ro|fcall|function_load|function\s+load)\b", "calls {seam}", _REDIS,
         "a Lua script sent with EVAL or register_script runs on the lab clock"),
    Seam("a bare threading.Lock's acquire with a time-out", (CODE,), r"(?!)", "waits with {seam}", _MACHINE,
         "an RLock's, a Condition's or an Event's wait with a time-out runs on the lab clock", _bare_lock_waits),
    Seam("the CPU clocks time.process_time() and time.thread_time()", (CODE,),
         r"\b(?P<seam>process_time|thread_time)(_ns)?\s*\(", "reads {seam}()", "the machine's CPU clock",
         "time.monotonic() runs on the lab clock"),
    Seam("a file's modification, change and access times (os.stat, os.path.getmtime, Path.stat)", (CODE,),
         r"\b(?P<seam>st_mtime|st_ctime|st_atime|getmtime|getctime|getatime)(_ns)?\b", "reads a file's time ({seam})",
         _MACHINE, "time.time() read when the file is written, and kept with it, runs on the lab clock"),
    Seam("the kernel's socket time-outs SO_RCVTIMEO and SO_SNDTIMEO", (CODE,),
         r"\b(?P<seam>SO_RCVTIMEO|SO_SNDTIMEO)\b", "sets {seam}", _MACHINE, "socket.settimeout() runs on the lab clock"),
    Seam("a shell script's sleep and timeout commands", (SHELL,),
         r"(^|[;&|(]|\bthen|\bdo)\s*(?P<seam>sleep|timeout)\s+\d", "calls the shell's `{seam}`", _MACHINE,
         "a wait inside the Python program it starts runs on the lab clock"),
)


@dataclass(frozen=True)
class Use:
    """One line of a lab file that uses a seam."""

    path: Path
    line: int
    seam: Seam
    found: str

    def sentence(self, shown: str, lines: list[int] | None = None) -> str:
        """Say what the line (or these lines) does and which clock it runs on, naming the file as `shown`."""
        where = ", ".join(str(line) for line in (lines or [self.line]))
        return (f"{shown}:{where} {self.seam.does.format(seam=self.found)}, which runs on {self.seam.clock} "
                f"here; {self.seam.instead}")


def _texts(source: str) -> tuple[list[tuple[int, str]], list[str]]:
    """Return a Python file's string literals, (first line, text), docstrings left out, and its lines with
    strings and comments blanked out."""
    lines = source.splitlines()
    code = [list(line) for line in lines]
    strings = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [], lines
    quoted = {tokenize.STRING, tokenize.COMMENT,
              *(getattr(tokenize, name) for name in ("FSTRING_MIDDLE", "TSTRING_MIDDLE") if hasattr(tokenize, name))}
    previous = None
    for index, token in enumerate(tokens):
        if token.type in quoted:
            (row, col), (end_row, end_col) = token.start, token.end
            for at in range(row, end_row + 1):
                text = code[at - 1]
                first = col if at == row else 0
                last = end_col if at == end_row else len(text)
                text[first:last] = " " * (last - first)
            following = tokens[index + 1].type if index + 1 < len(tokens) else None
            docstring = (token.type == tokenize.STRING and following in (tokenize.NEWLINE, tokenize.ENDMARKER)
                         and previous in (None, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL))
            if token.type != tokenize.COMMENT and not docstring:
                strings.append((row, _contents(token)))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.type
    return strings, ["".join(line) for line in code]


_DELIMITED = re.compile(r"""(?is)^[a-z]*('{3}|"{3}|'|")(.*)\1$""")


def _contents(token: tokenize.TokenInfo) -> str:
    """A string token's text without its prefix and quotes (an f-string's middle has neither)."""
    match = _DELIMITED.match(token.string) if token.type == tokenize.STRING else None
    return match.group(2) if match else token.string


def uses(path: Path) -> list[Use]:
    """Return every use of a registered seam in one lab file (Python or shell), in line order."""
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError):
        return []
    found: list[Use] = []
    if path.suffix == ".sh":
        for number, line in enumerate(source.splitlines(), start=1):
            text = line.split("#", 1)[0]
            for seam in SEAMS:
                if SHELL in seam.where and (match := re.search(seam.pattern, text, re.IGNORECASE)):
                    found.append(Use(path, number, seam, match.group("seam")))
        return found
    if path.suffix != ".py":
        return []
    strings, code = _texts(source)
    for seam in SEAMS:
        if seam.finder is not None:
            found += [Use(path, line, seam, text) for line, text in seam.finder(source)]
            continue
        if STRING in seam.where:
            for first, text in strings:
                for match in re.finditer(seam.pattern, text, re.IGNORECASE):
                    found.append(Use(path, first + text.count("\n", 0, match.start("seam")), seam, match.group("seam")))
        if CODE in seam.where:
            for number, line in enumerate(code, start=1):
                for match in re.finditer(seam.pattern, line, re.IGNORECASE):
                    found.append(Use(path, number, seam, match.group("seam")))
    unique = {(use.line, use.seam.name, use.found.lower()): use for use in found}
    return sorted(unique.values(), key=lambda use: (use.line, use.found))


def lab_files(folder: Path, readonly: Iterable[str] = ()) -> list[Path]:
    """Return the files of a lab folder that are the learner's: all its Python and shell files but the read-only ones."""
    kept = set(readonly)
    return sorted(path for path in folder.rglob("*") if path.is_file() and path.suffix in (".py", ".sh")
                  and "__pycache__" not in path.parts and str(path.relative_to(folder)) not in kept)


# A note names at most this many lines; more are counted.
SHOWN = 3


def note(files: Iterable[Path], show: Callable[[Path], str] = str) -> str:
    """Return the sentence a failed check adds when these files use a seam, or '' when none does.

    Lines of one file that use the same seam are named together ("uploads.py:81, 83 reads ...").
    """
    grouped: dict[tuple, list[Use]] = {}
    for use in (use for path in files for use in uses(path)):
        grouped.setdefault((use.path, use.seam.name, use.found.lower()), []).append(use)
    if not grouped:
        return ""
    said = [group[0].sentence(show(group[0].path), [use.line for use in group]) for group in grouped.values()]
    more = len(said) - SHOWN
    return "; ".join(said[:SHOWN]) + (f"; and {more} more use{'s' if more > 1 else ''} of a wall clock"
                                      if more > 0 else "")


def page_list() -> str:
    """Return the Markdown list of the registry for the lab-clock page."""
    return "\n".join(f"- {seam.name}: on {seam.clock}; {seam.instead}" for seam in SEAMS) + "\n"
