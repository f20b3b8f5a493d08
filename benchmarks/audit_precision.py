"""Measures how many of `budgetlab audit`'s findings on real Django + Celery code bases are right, and how fast it reads them.

Run from the repository root, with a folder that holds the code bases:

    python benchmarks/audit_precision.py ~/audit-trees
    python benchmarks/audit_precision.py ~/audit-trees --update-docs   # also rewrite docs/audit.md's tables and run

Each code base is pinned to one commit (TREES below) and lives in
FOLDER/<name>; the trees are never committed here. The script says which are
missing and how to get them (--from-mirrors writes them from local bare
mirrors). A person labelled the findings in benchmarks/audit_labels.csv:
every finding of a rule, or a seeded random 30 of them where a rule has more,
is true, false or debatable, with a one-line reason; findings labelled beyond
the sample count too. The script prints, per rule and per tree, how many
findings there are, how many were read and labelled, true, false, debatable,
and the precision, true / (true + false), debatable counted apart and listed
with their reasons; a sampled finding without a label is counted and listed,
never guessed. A labelled true finding that the audit no longer reports is
listed as lost. Wall time and lines per second are printed beside the
figures measured on the audit before issue 16, where there are such figures.

The trees marked reviewed (issue 42) were also read site by site before any
rule change: benchmarks/audit_reviewer_sites.csv says, for each place a
reviewer would or would not flag for a rule, true, false or debatable. A
finding without a label of its own that falls on such a site (its line within
the site's lines, same rule) takes the site's label; one on no labelled site
is listed as unlabelled. For these trees the script prints a table of its own
with each rule's precision and how many of the sites a reviewer flags it
reports (benchmarks/README.md says how the labels were made).

It also audits the audit's own fixtures (tests/audit/fixtures) as its tests
do and prints, per rule, how many findings the tests require of them
(seeded, read from the tests' EXPECTED tables), how many the audit gives on
their file and line (found) and the recall, listing each one it misses. The
tests fail on a miss; the recall does not change the exit code.

Exit code: 0 when every tree was present, every sampled finding had a label,
no true finding was lost, no file was left unread for its syntax, every rule
firing at least five times reached 80 % precision, and every rule firing on
the reviewed trees reached 85 % there; 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "benchmarks" / "audit_labels.csv"
REVIEWER_SITES = ROOT / "benchmarks" / "audit_reviewer_sites.csv"
DOCS_PAGE = ROOT / "docs" / "audit.md"
#: The audit's tests, whose EXPECTED tables are the one list of the findings its fixtures seed.
AUDIT_TESTS = ROOT / "tests" / "audit"
SAMPLE = 30
SEED = 16
MIN_FIRING = 5
TARGET_PRECISION = 0.80
#: Issue 42: every rule that fires on the reviewed trees, however rarely.
TARGET_REVIEWED = 0.85
#: The code base whose real run the docs page shows.
DOCS_TREE = "readthedocs.org"


@dataclass(frozen=True)
class Tree:
    """One public code base, pinned to a commit."""

    #: Folder name under the benchmark folder.
    name: str
    #: Where to get it.
    url: str
    #: The commit the labels were made on.
    commit: str
    #: The folder inside the checkout that is audited (the application code).
    audit_path: str
    #: Wall and CPU seconds of the audit before issue 16 on this tree, measured
    #: on the same 2-core machine (other agents running) on 2026-11-30; None
    #: for the trees added later (issue 28), which have no such figure.
    before_wall: float | None = None
    before_cpu: float | None = None
    #: Chosen and read site by site by someone who did not write the rules,
    #: before the rule changes of issue 42 (benchmarks/audit_reviewer_sites.csv).
    reviewed: bool = False
    #: The GitHub repository, as the `fetch` mirrors name it: owner+name.
    @property
    def mirror(self) -> str:
        return "+".join(self.url.rstrip("/").split("/")[-2:])


TREES = (
    Tree("saleor", "https://github.com/saleor/saleor", "723cd4eba87dfc72822ade45dc08a3caa548428d", ".", 20.38, 13.23),
    Tree("paperless-ngx", "https://github.com/paperless-ngx/paperless-ngx",
         "b0e0e8a35373a5d9d588a507cb63c79e50a23403", ".", 2.37, 1.95),
    Tree("readthedocs.org", "https://github.com/readthedocs/readthedocs.org",
         "7937196123747181054d4c2361ec81f93c37f8f2", ".", 2.35, 2.16),
    Tree("taiga-back", "https://github.com/taigaio/taiga-back", "3bea7114007afd83478a8d6f2a70afd70d94dc21", ".",
         2.58, 2.39),
    Tree("plane", "https://github.com/makeplane/plane", "4ca6d6c7b807ad09bb571af2c43e85bf47c3ec6b", ".", 2.32, 2.18),
    # Added for issue 28: code bases the audit was never tuned on, taken as they came
    # (Django + Celery, public, of moderate size), labelled after one run.
    Tree("kitsune", "https://github.com/mozilla/kitsune", "dcfa333911ed376a14c59eee83bde0345d03ea20", "."),
    Tree("bookwyrm", "https://github.com/bookwyrm-social/bookwyrm", "db40a61c9eaa6872607ca499b91893914dc1c8cf", "."),
    Tree("wger", "https://github.com/wger-project/wger", "aaba20184527b018e10f1be576202aa7e7cb4c21", "."),
    Tree("django-DefectDojo", "https://github.com/DefectDojo/django-DefectDojo",
         "7cfa159a6767b0ac6e66f3b1597a997e607e7308", "."),
    # Added for issue 42, chosen by their Celery use (benchmarks/README.md), never by
    # what the audit finds, and labelled site by site before the rules changed.
    Tree("treeherder", "https://github.com/mozilla/treeherder", "dc3080dd746d4732d5e06c0272471834d4639da0", ".",
         reviewed=True),
    Tree("h", "https://github.com/hypothesis/h", "24395ca438e3bd4b5c301e30ab81ca1d024ee840", ".", reviewed=True),
    Tree("obico-server", "https://github.com/TheSpaghettiDetective/obico-server",
         "49c0bc7001a3fd8d56297fc3032ba287bfe1d50b", ".", reviewed=True),
    Tree("openwisp-monitoring", "https://github.com/openwisp/openwisp-monitoring",
         "86558ebde44dc12e39525e60acbfd37cc1ba9587", ".", reviewed=True),
    Tree("mitxonline", "https://github.com/mitodl/mitxonline", "b3c9730edd606719f624086f2e8fab3223356f94", ".",
         reviewed=True),
)


def _audit_module():
    try:
        import budgetlab.audit as module
    except ModuleNotFoundError:  # a plain checkout, not installed: use its src/
        sys.path.insert(0, os.fspath(ROOT / "src"))
        import budgetlab.audit as module
    return module


def load_labels(path: Path = LABELS) -> dict[tuple[str, str, int, str], tuple[str, str, int]]:
    """(tree, path, line, code) -> (label, reason, now_at) from the labels file.

    now_at is the line a finding moved to (an inner loop now reported once at
    its outer loop), or 0; a true finding counts as kept when it is there.
    """
    labels = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            label = row["label"].strip()
            if label not in ("true", "false", "debatable"):
                raise SystemExit(f"audit_precision: {path.name}: unknown label {label!r} for {row['path']}:{row['line']}")
            now_at = int(row["now_at"]) if row["now_at"].strip() else 0
            labels[(row["tree"], row["path"], int(row["line"]), row["code"])] = (label, row["reason"].strip(), now_at)
    return labels


@dataclass(frozen=True)
class Site:
    """A place a reviewer read for one rule, on lines line..end_line of one file."""

    tree: str
    path: str
    line: int
    end_line: int
    code: str
    label: str
    #: The line of the site this one belongs to (an inner loop of a nest), or 0.
    part_of: int
    reason: str

    def covers(self, key: tuple[str, str, int, str]) -> bool:
        tree, path, line, code = key
        return (tree, path, code) == (self.tree, self.path, self.code) and self.line <= line <= self.end_line


def load_reviewer_sites(path: Path = REVIEWER_SITES) -> list[Site]:
    """The reviewer's sites, checked: known labels and rules, reviewed trees, no two sites of a rule overlapping."""
    reviewed = {tree.name for tree in TREES if tree.reviewed}
    sites = []
    with path.open(encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.DictReader(handle), start=2):
            where = f"{path.name} line {number}"
            label = row["label"].strip()
            if label not in ("true", "false", "debatable"):
                raise SystemExit(f"audit_precision: {where}: unknown label {label!r}")
            if row["tree"] not in reviewed:
                raise SystemExit(f"audit_precision: {where}: {row['tree']!r} is not a reviewed tree in TREES")
            if not re.fullmatch(r"BL00[1-9]", row["code"]):
                raise SystemExit(f"audit_precision: {where}: unknown rule {row['code']!r}")
            line = int(row["line"])
            end_line = int(row["end_line"]) if row["end_line"].strip() else line
            if end_line < line:
                raise SystemExit(f"audit_precision: {where}: end_line {end_line} is before line {line}")
            part_of = int(row["part_of"]) if row["part_of"].strip() else 0
            sites.append(Site(row["tree"], row["path"], line, end_line, row["code"], label, part_of,
                              row["reason"].strip()))
    ordered = sorted(sites, key=lambda site: (site.tree, site.path, site.code, site.line))
    for first, second in zip(ordered, ordered[1:]):  # sorted by line, any overlap shows between neighbours
        if (first.tree, first.path, first.code) == (second.tree, second.path, second.code) \
                and second.line <= first.end_line:
            raise SystemExit(f"audit_precision: {path.name}: two {first.code} sites overlap at "
                             f"{first.tree}:{first.path}:{second.line}")
    return sites


def judge_by_sites(keys, labels: dict, sites: list[Site]) -> dict:
    """labels, plus a label for each finding without one of its own that falls on a reviewer's site.

    A finding label and a site label that disagree about the same place stop the
    run: one of them is a mistake, and the table would depend on which is read.
    """
    for key, (label, _, _) in labels.items():
        for site in sites:
            if site.covers(key) and site.label != label:
                raise SystemExit(f"audit_precision: {':'.join(map(str, key))} is {label} in {LABELS.name} "
                                 f"but {site.label} in {REVIEWER_SITES.name}")
    judged = dict(labels)
    for key in keys:
        if key in judged:
            continue
        for site in sites:
            if site.covers(key):
                judged[key] = (site.label, "reviewer site: " + site.reason, 0)
                break
    return judged


def reviewed_rows(keys, labels, sites: list[Site], codes) -> tuple[list[list[str]], bool]:
    """Per rule on the reviewed trees: findings, read, true, false, debatable, precision, and the sites it reports.

    A site counts as reported when a finding of its rule falls on it or on a site
    that is part of it (an inner loop of the same nest). Whether the target was
    met: every rule with a finding here reached TARGET_REVIEWED.
    """
    reviewed = {tree.name for tree in TREES if tree.reviewed}
    rows = []
    met = True
    for code in codes:
        read = [key for key in _read([key for key in keys if key[3] == code], labels) if key[0] in reviewed]
        found = [key for key in keys if key[3] == code and key[0] in reviewed]
        counts = Counter(labels[key][0] for key in read if key in labels)
        decided = counts["true"] + counts["false"]
        precision = counts["true"] / decided if decided else None
        if found and (precision is None or precision < TARGET_REVIEWED):
            met = False
        flagged = [site for site in sites if site.code == code and site.label == "true" and not site.part_of]
        reported = sum(1 for site in flagged if any(part.covers(key) for part in _nest(site, sites) for key in found))
        rows.append([
            code, str(len(found)), str(sum(counts.values())), str(counts["true"]), str(counts["false"]),
            str(counts["debatable"]), "–" if precision is None else f"{precision:.0%}",
            str(len(flagged)), str(reported), f"{reported / len(flagged):.0%}" if flagged else "–",
        ])
    return rows, met


def _nest(site: Site, sites: list[Site]) -> list[Site]:
    """The site and the sites that are part of it (inner loops of its nest)."""
    return [site] + [part for part in sites if part.part_of == site.line
                     and (part.tree, part.path, part.code) == (site.tree, site.path, site.code)]


def _test_module(name: str):
    """A module of tests/audit, loaded from its file (tests/ is not a package the benchmark can import)."""
    spec = importlib.util.spec_from_file_location(f"audit_tests_{name}", AUDIT_TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as error:  # pytest comes with the test extra: `make venv` installs it
        raise SystemExit(f"audit_precision: error: {AUDIT_TESTS.relative_to(ROOT)}/{name}.py needs {error.name}, "
                         "which is not installed: run `make venv`") from None
    return module


def _findings_under(root: Path, target: Path) -> Counter:
    """(path relative to root, line, code) of every finding of the audit on target, counted."""
    result = _audit_module().audit([os.fspath(target)])
    return Counter((Path(f.path).resolve().relative_to(root.resolve()).as_posix(), f.line, f.code)
                   for f in result.findings if f.code != "BL000")


RECALL_HEAD = ["rule", "seeded", "found", "recall"]


def seeded_rows(codes) -> tuple[list[list[str]], list[str]]:
    """Per rule: the findings the audit's fixtures seed, how many it gives at their place, recall; and the missed ones.

    The seeded findings are those the tests require, read from their own
    tables: test_audit_rules.EXPECTED for the bad fixtures (audited together,
    as that test does) and test_audit_cases.EXPECTED for the cases (each
    audited alone, with its shared files). A seeded finding is found when a
    finding of its rule is on its file and line; a line seeded twice needs two.
    """
    rules_tests, cases_tests = _test_module("test_audit_rules"), _test_module("test_audit_cases")
    seeded: Counter = Counter()
    found: Counter = Counter()
    with tempfile.TemporaryDirectory(prefix="audit-fixtures-") as scratch:
        # A copy outside the checkout, as the tests use: the project's own audit settings must not apply.
        fixtures = Path(scratch) / "fixtures"
        shutil.copytree(AUDIT_TESTS / "fixtures", fixtures)
        for path, expected in rules_tests.EXPECTED.items():
            seeded.update((path, line, code) for line, code in expected)
        found.update(_findings_under(fixtures, fixtures / "bad"))
        for case, expected in cases_tests.EXPECTED.items():
            root = Path(scratch) / "cases" / case
            cases_tests.copy_case(case, root)
            seeded.update((f"cases/{case}/{path}", line, code) for path, line, code, _ in expected)
            found.update(Counter({(f"cases/{case}/{path}", line, code): count
                                  for (path, line, code), count in _findings_under(root, root).items()}))
    hits = {key: min(count, found[key]) for key, count in seeded.items()}
    rows = []
    for code in codes:
        total = sum(count for key, count in seeded.items() if key[2] == code)
        got = sum(count for key, count in hits.items() if key[2] == code)
        rows.append([code, str(total), str(got), f"{got / total:.0%}" if total else "–"])
    missed = [":".join(map(str, key)) for key, count in sorted(seeded.items()) if hits[key] < count]
    return rows, missed


def sample(keys: list[tuple[str, str, int, str]]) -> list[tuple[str, str, int, str]]:
    """All findings of a rule, or a seeded random SAMPLE of them."""
    keys = sorted(keys)
    if len(keys) <= SAMPLE:
        return keys
    return sorted(random.Random(SEED).sample(keys, SAMPLE))


def extract_from_mirror(mirrors: Path, tree: Tree, target: Path) -> bool:
    """Write the tree's pinned commit from a local bare mirror (MIRRORS/owner+name/repo) into target.

    Blobs the mirror left out (its largest files) are skipped; the audit reads
    source and launch files, which are small. False when there is no mirror
    or it lacks the commit.
    """
    git_dir = mirrors / tree.mirror / "repo"
    if not git_dir.is_dir():
        return False
    git = ["git", f"--git-dir={git_dir}"]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", tree.commit], capture_output=True, check=False)
    if listing.returncode:
        return False
    entries = []
    for item in listing.stdout.split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                entries.append((mode, sha, os.fsdecode(path)))
    reader = subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for mode, sha, path in entries:
        reader.stdin.write(sha + b"\n")
        reader.stdin.flush()
        header = reader.stdout.readline().split()
        if header[1] == b"missing":
            continue
        data = reader.stdout.read(int(header[2]))
        reader.stdout.read(1)
        destination = target / path
        destination.parent.mkdir(parents=True, exist_ok=True)
        if mode == b"120000":
            with contextlib.suppress(OSError):
                os.symlink(os.fsdecode(data), destination)
        else:
            destination.write_bytes(data)
    reader.stdin.close()
    reader.wait()
    return True


def run_trees(folder: Path, trees) -> tuple[list, dict, list[str]]:
    """Audit each present tree; (findings keys, figures per tree, missing-tree lines)."""
    audit = _audit_module().audit
    keys = []
    figures = {}
    missing = []
    for tree in trees:
        base = folder / tree.name
        if not base.is_dir():
            missing.append(
                f"missing  {tree.name}: git clone {tree.url} {base} && git -C {base} checkout {tree.commit}"
            )
            continue
        start, cpu_start = time.perf_counter(), time.process_time()
        result = audit([os.fspath(base / tree.audit_path)])
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        unread_syntax = sum(1 for f in result.findings if f.code == "BL000" and "cannot parse" in f.message.lower())
        unread = sum(1 for f in result.findings if f.code == "BL000")
        figures[tree.name] = (result.files, result.lines, wall, cpu, unread, unread_syntax)
        for finding in result.findings:
            if finding.code == "BL000":
                continue
            relative = Path(finding.path).resolve().relative_to(base.resolve()).as_posix()
            keys.append((tree.name, relative, finding.line, finding.code))
    return keys, figures, missing


def timed_cli(source: Path, target: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `python -m budgetlab.audit TARGET` run from the audit package under source."""
    env = dict(os.environ, PYTHONPATH=os.fspath(source))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "budgetlab.audit", os.fspath(target), "--format", "json"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def compare_speed(folder: Path, ref: str, rounds: int) -> None:
    """Time the audit at a git ref and this checkout's audit in turns on every tree, and print both.

    Taking turns in one session puts both under the same load, which a shared
    machine changes from one minute to the next.
    """
    with tempfile.TemporaryDirectory(prefix="audit-before-") as scratch:
        archive = subprocess.run(
            ["git", "-C", os.fspath(ROOT), "archive", ref, "src/budgetlab"], capture_output=True, check=False
        )
        if archive.returncode:
            raise SystemExit(f"audit_precision: error: git archive {ref} failed: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", scratch], input=archive.stdout, check=True)
        sources = {ref: Path(scratch) / "src", "this checkout": ROOT / "src"}
        totals = {name: [0.0, 0.0] for name in sources}
        for _ in range(rounds):
            for tree in TREES:
                target = folder / tree.name / tree.audit_path
                if not target.is_dir():
                    continue
                for name, source in sources.items():
                    wall, cpu = timed_cli(source, target)
                    totals[name][0] += wall
                    totals[name][1] += cpu
        for name, (wall, cpu) in totals.items():
            print(f"{name:<15} wall {wall / rounds:6.1f} s  CPU {cpu / rounds:6.1f} s  (all trees, mean of {rounds})")
        (old_wall, old_cpu), (new_wall, new_cpu) = totals.values()
        print(f"this checkout / {ref}: wall {new_wall / old_wall:.2f}x, CPU {new_cpu / old_cpu:.2f}x")


def precision_rows(keys, labels, codes) -> tuple[list[list[str]], list[str], bool]:
    """Table rows per rule, the sampled findings that have no label, and whether the target was met."""
    rows = []
    unlabelled = []
    met = True
    for code in codes:
        found = [key for key in keys if key[3] == code]
        read = _read(found, labels)
        counts = Counter(labels[key][0] for key in read if key in labels)
        unlabelled += [":".join(map(str, key)) for key in read if key not in labels]
        labelled = sum(counts.values())
        decided = counts["true"] + counts["false"]  # debatable findings are counted apart (issue 28)
        precision = counts["true"] / decided if decided else None
        if len(found) >= MIN_FIRING and (precision is None or precision < TARGET_PRECISION):
            met = False
        rows.append([
            code, str(len(found)), str(labelled), str(counts["true"]), str(counts["false"]),
            str(counts["debatable"]), "–" if precision is None else f"{precision:.0%}",
        ])
    return rows, unlabelled, met


def _read(found: list, labels: dict) -> list:
    """The findings counted: the seeded sample, which must all be labelled, and every other one a person labelled."""
    return sorted(set(sample(found)) | {key for key in found if key in labels})


def tree_rows(keys, labels, codes) -> list[list[str]]:
    """Per tree and rule that fired there: findings, read, true, false, debatable, precision (of the sampled ones)."""
    rows = []
    for tree in TREES:
        for code in codes:
            found = [key for key in keys if key[0] == tree.name and key[3] == code]
            if not found:
                continue
            read = [key for key in _read([key for key in keys if key[3] == code], labels) if key[0] == tree.name]
            counts = Counter(labels[key][0] for key in read if key in labels)
            labelled = sum(counts.values())
            precision = counts["true"] / (counts["true"] + counts["false"]) if counts["true"] + counts["false"] else None
            rows.append([tree.name, code, str(len(found)), str(labelled), str(counts["true"]), str(counts["false"]),
                         str(counts["debatable"]), "–" if precision is None else f"{precision:.0%}"])
    return rows


def markdown_table(rows: list[list[str]], head: list[str] | None = None) -> str:
    head = head or ["rule", "findings", "read", "true", "false", "debatable", "precision"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def docs_run(folder: Path) -> str:
    """A real run of the CLI on DOCS_TREE, as a person types it in the benchmark folder."""
    commands = [
        ["budgetlab", "audit", DOCS_TREE, "--statistics"],
        ["budgetlab", "audit", DOCS_TREE, "--output-format", "concise", "--allow-unreadable"],
        ["budgetlab", "audit", f"{DOCS_TREE}/readthedocs/oauth/tasks.py", "--select", "BL002"],
    ]
    env = dict(os.environ, COLUMNS="100", NO_COLOR="1", TERM="dumb")
    program = Path(sys.executable).with_name("budgetlab")
    parts = []
    for command in commands:
        completed = subprocess.run(
            [os.fspath(program), *command[1:]], cwd=folder, env=env, capture_output=True, text=True, timeout=300
        )
        output = completed.stdout + completed.stderr
        # Nothing machine-specific may reach the page: the folder is shown as the command's own relative paths.
        output = output.replace(os.fspath(folder.resolve()) + "/", "").replace(os.fspath(folder) + "/", "")
        parts.append("$ " + " ".join(command) + "\n" + output.rstrip() + f"\n$ echo $?\n{completed.returncode}")
    return "\n".join(parts)


def update_docs(table: str, recall: str, run: str) -> None:
    """Replace the generated blocks of docs/audit.md between their marker comments."""
    text = DOCS_PAGE.read_text(encoding="utf-8")
    for name, body in (("precision-table", table), ("seeded-recall", recall), ("real-run", f"```console\n{run}\n```")):
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise SystemExit(f"audit_precision: docs/audit.md has no <!-- {name}:start/end --> markers")
        text = pattern.sub(lambda match: match.group(1) + body + "\n" + match.group(2), text)
    DOCS_PAGE.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="folder that holds one checkout per code base, named as in TREES")
    parser.add_argument("--update-docs", action="store_true", help="rewrite the tables and the real run in docs/audit.md")
    parser.add_argument("--compare", metavar="REF",
                        help="also time the audit of a git ref (e.g. main) and this one in turns, under the same load")
    parser.add_argument("--rounds", type=int, default=2, help="turns each for --compare (default: 2)")
    parser.add_argument("--from-mirrors", metavar="DIR", type=Path,
                        help="write each missing tree's pinned commit from a bare mirror DIR/owner+name/repo first")
    options = parser.parse_args(argv)
    if not options.folder.is_dir():
        print(f"audit_precision: error: not a folder: {options.folder}", file=sys.stderr)
        return 2
    if options.from_mirrors:
        for tree in TREES:
            target = options.folder / tree.name
            if not target.exists() and extract_from_mirror(options.from_mirrors, tree, target):
                print(f"written  {tree.name} at {tree.commit} from {options.from_mirrors / tree.mirror}")
    labels = load_labels()
    sites = load_reviewer_sites()
    keys, figures, missing = run_trees(options.folder, TREES)
    for line in missing:
        print(line)
    labels = judge_by_sites(keys, labels, sites)
    codes = [code for code in _audit_module().RULES if code != "BL000"]
    rows, unlabelled, met = precision_rows(keys, labels, codes)
    print()
    print(markdown_table(rows))
    print()
    print(markdown_table(tree_rows(keys, labels, codes),
                         ["tree", "rule", "findings", "read", "true", "false", "debatable", "precision"]))
    print()
    reviewed, reviewed_met = reviewed_rows(keys, labels, sites, codes)
    print(f"Reviewed trees (issue 42; every rule that fires here needs {TARGET_REVIEWED:.0%}):")
    print(markdown_table(reviewed, ["rule", "findings", "read", "true", "false", "debatable", "precision",
                                    "sites flagged", "reported", "site recall"]))
    print()
    recall, missed = seeded_rows(codes)
    print("Seeded fixtures (the findings tests/audit requires of its fixtures):")
    print(markdown_table(recall, RECALL_HEAD))
    print()
    for key in sorted(key for key in keys if labels.get(key, ("",))[0] == "debatable"):
        print("debatable  " + ":".join(map(str, key)) + "  (" + labels[key][1] + ")")
    print()
    width = max(len(tree.name) for tree in TREES) + 2
    print(f"{'tree':<{width}}{'files':>7}{'lines':>10}{'unread':>8}{'syntax':>8}{'wall s':>8}{'before':>8}{'CPU s':>7}"
          f"{'before':>8}{'lines/s':>9}")
    totals = [0, 0, 0.0, 0.0, 0, 0, 0.0, 0.0, 0.0, 0.0]
    for tree in TREES:
        if tree.name not in figures:
            continue
        files, lines, wall, cpu, unread, syntax = figures[tree.name]
        before_wall = "–" if tree.before_wall is None else f"{tree.before_wall:.1f}"
        before_cpu = "–" if tree.before_cpu is None else f"{tree.before_cpu:.1f}"
        print(f"{tree.name:<{width}}{files:>7,}{lines:>10,}{unread:>8}{syntax:>8}{wall:>8.1f}{before_wall:>8}"
              f"{cpu:>7.1f}{before_cpu:>8}{lines / wall:>9,.0f}")
        for index, value in enumerate((files, lines, wall, cpu, unread, syntax)):
            totals[index] += value
        if tree.before_wall is not None:  # the speed comparison covers the trees measured before issue 16
            totals[6] += tree.before_wall
            totals[7] += tree.before_cpu
            totals[8] += wall
            totals[9] += cpu
    files, lines, wall, cpu, unread, syntax, before_wall, before_cpu, wall_then, cpu_then = totals
    if figures:
        print(f"{'all':<{width}}{files:>7,}{lines:>10,}{unread:>8}{syntax:>8}{wall:>8.1f}{'':>8}"
              f"{cpu:>7.1f}{'':>8}{lines / wall:>9,.0f}")
    if before_wall:
        print(f"wall {wall_then / before_wall:.2f}x and CPU {cpu_then / before_cpu:.2f}x the audit before issue 16 on "
              "the trees measured then (wall time also counts whatever else the machine runs)")
    present = {tree.name for tree in TREES if tree.name in figures}
    current = set(keys)
    lost = sorted(
        key for key, (label, _, now_at) in labels.items()
        if label == "true" and key[0] in present and key not in current and (*key[:2], now_at, key[3]) not in current
    )
    for key in lost:
        print("lost true finding  " + ":".join(map(str, key)) + "  (" + labels[key][1] + ")")
    for key in unlabelled:
        print("no label  " + key)
    for key in missed:
        print("seeded, not found  " + key)
    if options.compare:
        compare_speed(options.folder, options.compare, options.rounds)
    if options.update_docs and not missing:
        per_tree = markdown_table(tree_rows(keys, labels, codes),
                                  ["tree", "rule", "findings", "read", "true", "false", "debatable", "precision"])
        update_docs(markdown_table(rows) + "\n\n" + per_tree, markdown_table(recall, RECALL_HEAD),
                    docs_run(options.folder))
        print("docs/audit.md: precision table, seeded recall and real run rewritten")
    ok = not missing and not unlabelled and not lost and syntax == 0 and met and reviewed_met
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
