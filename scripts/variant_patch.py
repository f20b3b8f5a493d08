"""Turns edited copies of a lab's files into variant patches (a base tree plus a small diff) and back.

A variant is a wrong fix (the graders must reject it) or an alternative
(they must accept it). It is stored as a unified diff against labs/ or
solutions/, whichever gives the smaller diff, and declared in the lab's
variants file (labs.toml's `variants`, e.g. tests/lab2_batch_jobs/variants.toml).

Usage:
    python scripts/variant_patch.py add N KIND NAME FOLDER [--why TEXT]
        FOLDER holds some or all of lab N's files, edited; they are laid over
        labs/<slug> (files FOLDER lacks stay the starter's), diffed against both
        bases, and the smaller patch is written and declared. KIND is
        wrong_fix, alternative or wall_seam. An existing NAME is replaced.
    python scripts/variant_patch.py convert N
        Every old-style overlay folder tests/<slug>/wrong_fixes/<name>/ and
        tests/<slug>/alternatives/<name>/ of lab N becomes a patch (as `add`
        does), and the folder is deleted.
    python scripts/variant_patch.py tree N NAME OUT
        Writes variant NAME applied to its base into OUT/<slug>, a folder to edit
        and hand back to `add`.

A patch leaves out comment-only edits of Python files whenever the module's
syntax tree stays the same (the starter's TODO comments stay, the variant's own
comments go: its `why` says it), unless the variants file sets
`keep_comments = true` because the lab's graders read comments (lab 1's do).

`why` (one line: why the graders must reject it, or why it is still a fix)
comes from --why, else from a first-line comment "# Wrong fix (...): why" or
"# Alternative fix (...): why" (which is dropped from the file), else from the
first comment or docstring line that starts with "Wrong:" or "Alternative:".
Run `python -c "from budgetlab import integrity; integrity.write()"` after.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

from budgetlab import labs, patches, variants
from budgetlab.errors import BudgetlabError
from budgetlab.paths import labs_root

FOLDERS = {"wrong fix": "wrong_fixes", "alternative": "alternatives", "wall seam": "wall_seams"}
HEADER = re.compile(r"^# (?:Wrong|Alternative) fix \([^)]*\): (.+)\n")
INLINE = re.compile(r"^\s*(?:#|\"\"\")?\s*(?:Wrong|Alternative): (.+?)(?:\"\"\")?\s*$", re.MULTILINE)
UNSAID = "TODO: say why the graders must reject or accept this"
PREAMBLE = """# The wrong fixes and alternatives of lab {number}, each a patch against labs/ or solutions/ (see budgetlab.variants).
# Written by scripts/variant_patch.py; edit a `why` here freely, but make patches with the script.
"""


def overlaid(lab: labs.Lab, folder: Path) -> tuple[dict[str, str], list[str]]:
    """Return the starter's lab files with the folder's laid over them, and the header comments found."""
    texts = variants.lab_texts(lab.starter_dir())
    headers = []
    for name, text in variants.lab_texts(folder).items():
        match = HEADER.match(text)
        if match:
            headers.append(match.group(1))
            text = text[match.end():]
        texts[name] = text
    return texts, headers


def why_of(texts: dict[str, str], headers: list[str]) -> str | None:
    if headers:
        # Files a variant copies unchanged say "the reference helper"; the longest line says what is wrong.
        return max(headers, key=len)
    for text in texts.values():
        match = INLINE.search(text)
        if match:
            return match.group(1)
    return None


def minimized(name: str, before: str | None, after: str) -> str:
    """Return `after` with the comment-only edits against `before` undone, when its syntax tree stays the same."""
    if before is None or not name.endswith(".py"):
        return after
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal":
            out += old[i1:i2]
        else:
            out += [line for line in old[i1:i2] if line.lstrip().startswith("#")]
            out += [line for line in new[j1:j2] if not line.lstrip().startswith("#")]
    text = "".join(out)
    try:
        # A "#" line inside a string is not a comment; the trees then differ and the file is kept whole.
        return text if ast.dump(ast.parse(text)) == ast.dump(ast.parse(after)) else after
    except SyntaxError:
        return after


def keeps_comments(path: Path) -> bool:
    return path.exists() and bool(tomllib.loads(path.read_text()).get("keep_comments", False))


def record(lab: labs.Lab, kind: str, name: str, texts: dict[str, str], why: str | None) -> variants.Variant:
    """Write the smaller of the two patches for `texts` and declare it; replace a variant of that name."""
    path = variants.variants_file(lab)
    if path is None:
        raise BudgetlabError(f"lab {lab.number} declares no variants file; add "
                             f'variants = "tests/{lab.slug}/variants.toml" to its [[lab]] in tests/labs.toml')
    keep = keeps_comments(path)
    candidates = {}
    for base in variants.BASES:
        before = variants.lab_texts(labs_root() / base / lab.slug)
        candidates[base] = patches.diff(before, texts if keep else
                                        {name: minimized(name, before.get(name), text) for name, text in texts.items()})
    base = min(variants.BASES, key=lambda b: candidates[b].count("\n"))
    if not candidates[base]:
        raise BudgetlabError(f"{name} is identical to {base}/{lab.slug}; a variant must differ from it")
    patch = path.parent / FOLDERS[kind] / f"{name}.patch"
    patch.parent.mkdir(parents=True, exist_ok=True)
    patch.write_text(candidates[base])
    earlier = variants.load(lab) if path.exists() else []
    why = why or next((v.why for v in earlier if v.name == name), UNSAID)
    made = variants.Variant(name, kind, base, patch, why)
    kept = [v for v in earlier if v.name != name]
    write_manifest(lab, path, kept + [made], keep)
    return made


def write_manifest(lab: labs.Lab, path: Path, entries: list[variants.Variant], keep_comments: bool) -> None:
    blocks = [PREAMBLE.format(number=lab.number)]
    if keep_comments:
        blocks.append("# The graders read comments, so patches keep every comment edit.\nkeep_comments = true\n")
    for kind in FOLDERS:  # wrong fixes first, then alternatives, each in name order
        for v in sorted((v for v in entries if v.kind == kind), key=lambda v: v.name):
            blocks.append(f'\n[[variant]]\nname = "{v.name}"\nkind = "{v.kind}"\nbase = "{v.base}"\n'
                          f'patch = "{v.patch.relative_to(path.parent)}"\nwhy = {_toml_string(v.why)}\n')
    path.write_text("".join(blocks))


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def add(lab: labs.Lab, kind: str, name: str, folder: Path, why: str | None) -> variants.Variant:
    if not folder.is_dir():
        raise BudgetlabError(f"{folder} is not a folder")
    texts, headers = overlaid(lab, folder)
    return record(lab, kind, name, texts, why or why_of(texts, headers))


def convert(lab: labs.Lab) -> list[variants.Variant]:
    made = []
    for kind, folder_name in FOLDERS.items():
        folder = lab.tests_dir() / folder_name
        for overlay in sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []:
            if overlay.name == "__pycache__":
                continue
            made.append(add(lab, kind, overlay.name, overlay, None))
            shutil.rmtree(overlay)
    return made


def tree(lab: labs.Lab, name: str, out: Path) -> Path:
    chosen = [v for v in variants.load(lab) if v.name == name]
    if not chosen:
        raise BudgetlabError(f"lab {lab.number} has no variant {name!r}")
    with tempfile.TemporaryDirectory() as scratch:
        built = variants.build(lab, chosen[0], Path(scratch))
        shutil.copytree(built / lab.slug, out / lab.slug, ignore=variants.IGNORED)
    return out / lab.slug


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    adding = commands.add_parser("add", help="an edited folder of lab files becomes a patch")
    adding.add_argument("lab", type=int)
    adding.add_argument("kind", choices=[k.replace(" ", "_") for k in FOLDERS])
    adding.add_argument("name")
    adding.add_argument("folder", type=Path)
    adding.add_argument("--why")
    converting = commands.add_parser("convert", help="old-style overlay folders become patches")
    converting.add_argument("lab", type=int)
    building = commands.add_parser("tree", help="write a variant's files, to edit them")
    building.add_argument("lab", type=int)
    building.add_argument("name")
    building.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    try:
        lab = labs.get(args.lab)
        if args.command == "add":
            if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
                raise BudgetlabError(f"variant name {args.name!r} should be lower_case_with_underscores")
            made = [add(lab, args.kind.replace("_", " "), args.name, args.folder, args.why)]
        elif args.command == "convert":
            made = convert(lab)
        else:
            print(tree(lab, args.name, args.out))
            return 0
    except BudgetlabError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for v in made:
        print(f"lab {lab.number} {v.kind:<11} {v.name:<32} base {v.base:<9} "
              f"{v.patch.read_text().count(chr(10)):4d} lines  {v.why}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
