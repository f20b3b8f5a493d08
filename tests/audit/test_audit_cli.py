"""`python -m budgetlab.audit` as a user meets it: exit codes, options, noqa, config and output formats."""

from __future__ import annotations

import io
import json
import re
import textwrap
from pathlib import Path

import pytest

from budgetlab.audit import RULES, main, run_audit
from budgetlab.audit.config import KEYS
from budgetlab.audit.rules import SELECTABLE

# The OASIS SARIF 2.1.0 schema, vendored: a public JSON schema (data, not code),
# from https://github.com/oasis-tcs/sarif-spec (Schemata/sarif-schema-2.1.0.json).
SARIF_SCHEMA = Path(__file__).parent / "sarif-schema-2.1.0.json"
FINDING_LINE = re.compile(r"^(?P<path>\S+):(?P<line>\d+):(?P<column>\d+): (?P<code>BL\d{3}) \[(?P<severity>\w+)\] \S")

TASK_WITH_CATCH_ALL = """\
from celery import shared_task


@shared_task(soft_time_limit=60)
def import_rows(rows):
    for row in rows:
        try:
            row.save()
        except Exception:{comment}
            row.fail()
"""

WORKER_LINE = "celery -A kontor worker -Q imports --soft-time-limit ${{SOFT_TIME_LIMIT:-120}}{comment}\n"


def _write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _codes(stdout: str) -> list[str]:
    return [match.group("code") for match in map(FINDING_LINE.match, stdout.splitlines()) if match]


def test_clean_tree_exits_0(cli, fixtures):
    """Auditing correct code prints `All checks passed.` with the files read, and exits 0."""
    result = cli(fixtures / "good", cwd=fixtures)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}{result.stderr}"
    files = sum(1 for path in (fixtures / "good").rglob("*") if path.is_file())
    assert result.stdout.strip().splitlines()[-1] == f"All checks passed. {files} files read, 0 not read.", \
        result.stdout


def test_concise_findings_are_ruff_style_lines(cli, fixtures):
    """--output-format concise prints `path:line:col: CODE [severity] title` per finding and a count, exit 1."""
    result = cli("bad", "--output-format", "concise", cwd=fixtures)
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert re.fullmatch(rf"Found {len(lines) - 1} problems \(.*\)\. \d+ files read, 0 not read\.", lines[-1]), lines[-1]
    for line in lines[:-1]:
        match = FINDING_LINE.match(line)
        assert match and match.group("path").startswith("bad/"), f"not path:line:col: CODE [severity]: {line}"
        assert match.group("code") in RULES and match.group("severity") in ("error", "warning", "note"), line
        assert len(line) - len(match.group("path")) < 230 and "(lab " not in line, f"a title, not an essay: {line}"


def test_full_findings_show_the_line_a_caret_and_the_help_link(cli, fixtures):
    """The default format quotes the source line, puts a caret under the column and links the rule's docs."""
    result = cli("bad/lab3/sweeps.py", cwd=fixtures)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    head = FINDING_LINE.match(lines[0])
    assert head and head.group("code") == "BL003", lines[0]
    column = int(head.group("column"))
    source = (fixtures / "bad/lab3/sweeps.py").read_text(encoding="utf-8").splitlines()[int(head.group("line")) - 1]
    assert lines[2] == f"{head.group('line')} | {source}", lines[:4]
    caret = lines[3].split("| ", 1)[1]
    assert caret.index("^") == column - 1 and caret.endswith("^ BL003"), lines[3]
    assert lines[4].endswith("= help: " + RULES["BL003"].help_uri), lines[4]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--select", "BL009", "."], "unknown rule code 'BL009'"),
        (["--ignore", "E501", "."], "unknown rule code 'E501'"),
        (["no/such/dir"], "path not found: no/such/dir"),
        (["--format", "xml", "."], "invalid choice: 'xml'"),
        ([], "required: PATH"),
    ],
)
def test_usage_errors_exit_2_with_one_line(cli, tmp_path, arguments, expected):
    """Unknown codes, missing paths and bad formats give exit 2 and one line on stderr, no traceback."""
    result = cli(*arguments, cwd=tmp_path)
    assert result.returncode == 2, f"exit {result.returncode}\n{result.stderr}"
    assert result.stdout == "", f"usage errors print nothing on stdout: {result.stdout!r}"
    assert len(result.stderr.strip().splitlines()) == 1, f"more than one line:\n{result.stderr}"
    assert expected in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_select_and_ignore_take_codes_and_prefixes(cli, fixtures):
    """--select keeps only the named rules, --ignore drops them; prefixes like BL00 work too."""
    only_two = cli("bad", "--select", "BL002", cwd=fixtures)
    assert set(_codes(only_two.stdout)) == {"BL002"}, only_two.stdout
    all_rules = cli("bad", "--select", "bl00", cwd=fixtures)
    assert set(_codes(all_rules.stdout)) == set(SELECTABLE), all_rules.stdout
    without = cli("bad", "--ignore", "BL001,BL003", cwd=fixtures)
    assert set(_codes(without.stdout)) == set(SELECTABLE) - {"BL001", "BL003"}, without.stdout
    none_left = cli("bad", "--ignore", "BL", cwd=fixtures)
    assert none_left.returncode == 0 and "All checks passed." in none_left.stdout, none_left.stdout


@pytest.mark.parametrize(
    ("comment", "silenced"),
    [
        ("  # noqa: BL002", True),
        ("  # noqa:BL001,BL002", True),
        ("  # noqa", True),
        ("  # noqa: BL003", False),
        ("  # noqa: E722", False),
    ],
)
def test_noqa_on_a_python_line(cli, tmp_path, comment, silenced):
    """`# noqa: BL002` or a bare `# noqa` silences the line; other codes do not."""
    _write(tmp_path, "tasks.py", TASK_WITH_CATCH_ALL.format(comment=comment))
    result = cli("tasks.py", cwd=tmp_path)
    assert result.returncode == (0 if silenced else 1), f"{comment!r}:\n{result.stdout}"


@pytest.mark.parametrize(
    ("text", "silenced"),
    [
        (WORKER_LINE.format(comment="  # noqa: BL001"), True),
        ("# noqa: BL001 until the settings carry the budget\n" + WORKER_LINE.format(comment=""), True),
        (WORKER_LINE.format(comment="  # noqa: BL002"), False),
        (WORKER_LINE.format(comment=""), False),
    ],
)
def test_noqa_in_a_launch_file(cli, tmp_path, text, silenced):
    """In a shell script, `# noqa: BL001` on the worker line or right above it silences BL001."""
    _write(tmp_path, "entrypoint.sh", text)
    result = cli("entrypoint.sh", cwd=tmp_path)
    assert result.returncode == (0 if silenced else 1), f"{text!r}:\n{result.stdout}"


def _project(tmp_path: Path, table: str) -> Path:
    _write(tmp_path, "pyproject.toml", "[project]\nname = 'kontor'\n\n[tool.budgetlab.audit]\n" + table)
    _write(tmp_path, "src/tasks.py", TASK_WITH_CATCH_ALL.format(comment=""))
    _write(tmp_path, "deploy/entrypoint.sh", WORKER_LINE.format(comment=""))
    return tmp_path


def test_pyproject_ignore_and_cli_override(cli, tmp_path):
    """`ignore` in [tool.budgetlab.audit] applies to paths below it; a CLI --ignore replaces it."""
    project = _project(tmp_path, 'ignore = ["BL002"]\n')
    from_config = cli("src", "deploy", cwd=project)
    assert _codes(from_config.stdout) == ["BL001"], from_config.stdout
    overridden = cli("src", "deploy", "--ignore", "BL001", cwd=project)
    assert _codes(overridden.stdout) == ["BL002"], overridden.stdout


def test_pyproject_is_found_above_the_given_path(cli, tmp_path):
    """The nearest pyproject.toml with the table applies even when the path is deep inside the project."""
    project = _project(tmp_path, 'select = "BL001"\n')
    result = cli(project / "src" / "tasks.py", cwd=project / "deploy")
    assert result.returncode == 0 and "All checks passed." in result.stdout, result.stdout


def test_pyproject_exclude_skips_walked_files_but_not_given_ones(cli, tmp_path):
    """`exclude` globs hide files met while walking; a file named on the command line is still audited."""
    project = _project(tmp_path, 'exclude = ["deploy/*"]\n')
    walked = cli(".", cwd=project)
    assert _codes(walked.stdout) == ["BL002"], walked.stdout
    named = cli("deploy/entrypoint.sh", cwd=project)
    assert _codes(named.stdout) == ["BL001"], named.stdout


def test_pyproject_reference_models(cli, tmp_path):
    """`reference-models` names the reference data; there is no default, so Category is not assumed."""
    _write(tmp_path, "pyproject.toml", '[tool.budgetlab.audit]\nreference-models = ["Currency"]\n')
    _write(
        tmp_path,
        "rates.py",
        textwrap.dedent(
            """\
            def convert(rows):
                for row in rows:
                    row.rate = Currency.objects.get(code=row.currency)
                    row.category = Category.objects.get(code=row.hint)
            """
        ),
    )
    result = cli("rates.py", cwd=tmp_path)
    assert result.stdout.startswith("rates.py:3:") and _codes(result.stdout) == ["BL004"], result.stdout


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('colour = "red"\n', "unknown key 'colour'"),
        ('select = ["BL404"]\n', "unknown rule code 'BL404'"),
        ("select = [\n", "invalid TOML"),
        ("exclude = 3\n", "must be a list of strings"),
    ],
)
def test_bad_pyproject_is_a_usage_error(cli, tmp_path, table, expected):
    """A broken audit table stops with exit 2 and one line naming the file."""
    project = _project(tmp_path, table)
    result = cli(".", cwd=project)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr and "pyproject.toml" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, result.stderr


BROKEN = ("latin1-entrypoint.sh", "syntax_error.py", "undecodable.py")


def test_unreadable_files_are_bl000_findings_and_exit_2(cli, fixtures):
    """A syntax error, undecodable bytes and a non-UTF-8 script are each a BL000 error; the run exits 2."""
    result = cli("broken", cwd=fixtures)
    assert result.returncode == 2, f"an unread file must fail the run:\n{result.stdout}{result.stderr}"
    for name in BROKEN:
        assert re.search(rf"^broken/{re.escape(name)}:1:1: BL000 \[error\] Cannot parse \(", result.stdout, re.M), (
            f"{name} not reported:\n{result.stdout}"
        )
    assert result.stdout.strip().splitlines()[-1] == "No problems in the files read. 0 files read, 3 not read (BL000).", result.stdout
    assert "Traceback" not in result.stderr and "All checks passed" not in result.stdout, result.stdout


def test_a_single_unparsable_file_never_passes(cli, fixtures):
    """Auditing one file that cannot be parsed never prints "All checks passed." and exits 2."""
    result = cli("broken/syntax_error.py", cwd=fixtures)
    assert result.returncode == 2 and "All checks passed" not in result.stdout, result.stdout


def test_allow_unreadable_keeps_the_findings_and_exits_on_the_rest(cli, fixtures):
    """With --allow-unreadable, BL000 is still printed and the exit code follows the other findings."""
    alone = cli("broken", "--allow-unreadable", cwd=fixtures)
    assert alone.returncode == 0 and _codes(alone.stdout) == ["BL000"] * 3, alone.stdout
    mixed = cli("broken", "bad/lab3", "--allow-unreadable", cwd=fixtures)
    assert mixed.returncode == 1 and set(_codes(mixed.stdout)) == {"BL000", "BL003"}, mixed.stdout + mixed.stderr
    strict = cli("broken", "bad/lab3", cwd=fixtures)
    assert strict.returncode == 2 and "BL003" in _codes(strict.stdout), strict.stdout


def test_json_output(cli, fixtures):
    """--output-format json prints one document: findings (BL000 among them), a summary with files read and not."""
    result = cli("bad", "broken", "--output-format", "json", cwd=fixtures)
    assert result.returncode == 2, result.stderr
    document = json.loads(result.stdout)
    findings = document["findings"]
    unread = [finding for finding in findings if finding["code"] == "BL000"]
    assert len(findings) - len(unread) == document["summary"]["problems"] > 0, document["summary"]
    assert set(findings[0]) == {"code", "severity", "path", "line", "column", "end_line", "message", "url"}, findings[0]
    assert {finding["path"] for finding in unread} == {f"broken/{name}" for name in BROKEN}, unread
    assert document["summary"]["unread"] == 3 and document["summary"]["files"] > 0, document["summary"]
    assert "3 not read (BL000)" in result.stderr, "the summary goes to stderr in JSON mode"


def test_github_output_annotates_each_finding(cli, fixtures):
    """--output-format github prints one workflow command per finding, BL000 as an error."""
    result = cli("bad/lab3", "broken/syntax_error.py", "--output-format", "github", cwd=fixtures)
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith(("::warning ", "::error ", "::notice ")) for line in lines), lines
    assert any(line.startswith("::error title=budgetlab (BL000),file=broken/syntax_error.py,line=1,") for line in lines), lines
    assert any("file=bad/lab3/sweeps.py,line=12,col=5," in line for line in lines), lines


def test_statistics_count_findings_per_rule(cli, fixtures):
    """--statistics prints one line per rule that fired, with its count and name, then the summary."""
    result = cli("bad", "--statistics", cwd=fixtures)
    lines = result.stdout.strip().splitlines()
    rows = [line.split("\t") for line in lines[:-1]]
    assert [row[1] for row in rows] == list(SELECTABLE), lines
    assert all(row[2] == RULES[row[1]].name and row[0].strip().isdigit() for row in rows), lines
    total = sum(int(row[0]) for row in rows)
    assert lines[-1].startswith(f"Found {total} problems"), lines[-1]


def test_help_states_exit_codes_noqa_and_config_keys(cli, tmp_path):
    """--help lists every exit code, how noqa works and every key of [tool.budgetlab.audit]."""
    result = cli("--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for text in ("exit codes:", "  0  ", "  1  ", "  2  ", "# noqa: BL003", "--allow-unreadable", "--statistics",
                 "--output-format", *KEYS):
        assert text in result.stdout, f"--help does not mention {text!r}:\n{result.stdout}"


def test_noqa_on_any_line_of_a_multi_line_for(cli, tmp_path):
    """`# noqa: BL003` on the second line of a `for` header silences the loop's finding."""
    source = textwrap.dedent(
        """\
        from celery import shared_task
        from kontor.models import Invoice


        @shared_task
        def close():
            for invoice in Invoice.objects.filter(
                status="paid",{comment}
            ):
                invoice.close()
        """
    )
    _write(tmp_path, "tasks.py", source.format(comment=""))
    assert _codes(cli("tasks.py", cwd=tmp_path).stdout) == ["BL003"]
    _write(tmp_path, "tasks.py", source.format(comment="  # noqa: BL003"))
    result = cli("tasks.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout


# The parts of SARIF 2.1.0 that GitHub code scanning reads, written down by
# hand from the OASIS specification (section 3), so nothing is downloaded.
SARIF_SUBSET_SCHEMA = {
    "type": "object",
    "required": ["$schema", "version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"},
        "$schema": {"type": "string", "pattern": "sarif-2\\.1\\.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool", "results"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name", "rules"],
                                "properties": {
                                    "name": {"type": "string", "minLength": 1},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription", "helpUri"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {
                                                    "type": "object",
                                                    "required": ["text"],
                                                    "properties": {"text": {"type": "string", "minLength": 1}},
                                                },
                                                "helpUri": {"type": "string", "pattern": "^https?://"},
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["ruleId", "level", "message", "locations"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": 0},
                                "level": {"enum": ["none", "note", "warning", "error"]},
                                "message": {
                                    "type": "object",
                                    "required": ["text"],
                                    "properties": {"text": {"type": "string", "minLength": 1}},
                                },
                                "locations": {
                                    "type": "array",
                                    "minItems": 1,
                                    "items": {
                                        "type": "object",
                                        "required": ["physicalLocation"],
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "required": ["artifactLocation", "region"],
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {"uri": {"type": "string", "pattern": "^[^/]"}},
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "required": ["startLine", "startColumn"],
                                                        "properties": {
                                                            "startLine": {"type": "integer", "minimum": 1},
                                                            "startColumn": {"type": "integer", "minimum": 1},
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def test_sarif_output_is_ready_for_code_scanning(cli, fixtures):
    """--format sarif gives SARIF 2.1.0 with every rule, and results that point at relative paths."""
    result = cli("bad", "--output-format", "sarif", cwd=fixtures)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(RULES), "the driver must list every rule"
    assert run["invocations"][0]["executionSuccessful"] is True, "every file was read"
    for sarif_result in run["results"]:
        assert rules[sarif_result["ruleIndex"]]["id"] == sarif_result["ruleId"], "ruleIndex points at another rule"
        location = sarif_result["locations"][0]["physicalLocation"]
        uri = location["artifactLocation"]["uri"]
        assert (fixtures / uri).is_file(), f"{uri} is not a path relative to the working directory"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, SARIF_SUBSET_SCHEMA)
    jsonschema.validate(document, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def test_sarif_of_a_run_with_unread_files_says_it_did_not_succeed(cli, fixtures):
    """An unread file makes executionSuccessful false, with one notification and one BL000 result per file."""
    result = cli("bad/lab3", "broken", "--output-format", "sarif", cwd=fixtures)
    assert result.returncode == 2, result.stderr
    document = json.loads(result.stdout)
    invocation = document["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False, invocation
    notified = sorted(n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                      for n in invocation["toolExecutionNotifications"])
    assert notified == [f"broken/{name}" for name in BROKEN], notified
    assert sum(r["ruleId"] == "BL000" for r in document["runs"][0]["results"]) == 3, document["runs"][0]["results"]
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def test_run_audit_writes_to_the_given_streams(fixtures):
    """run_audit prints to the out and err it is given and returns the exit code."""
    out, err = io.StringIO(), io.StringIO()
    code = run_audit([str(fixtures / "bad" / "lab5")], fmt="text", select="BL005", out=out, err=err)
    assert code == 1 and out.getvalue().count(" BL005 ") == 3, out.getvalue()
    out, err = io.StringIO(), io.StringIO()
    assert run_audit([str(fixtures)], fmt="yaml", out=out, err=err) == 2
    assert "unknown format 'yaml'" in err.getvalue() and out.getvalue() == "", err.getvalue()


def test_main_returns_the_exit_code(fixtures, capsys):
    """main() parses argv like the budgetlab-audit command and returns 0, 1 or 2."""
    assert main([str(fixtures / "good")]) == 0
    assert main([str(fixtures / "bad"), "--select", "BL004"]) == 1
    assert main(["--select"]) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err
