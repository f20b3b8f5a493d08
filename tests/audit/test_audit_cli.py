"""`python -m budgetlab.audit` as a user meets it: exit codes, options, noqa, config and output formats."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from budgetlab.audit import RULES, main, run_audit

TASK_WITH_CATCH_ALL = """\
from celery import shared_task


@shared_task
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
    return [line.split()[1] for line in stdout.splitlines() if line.count(":") >= 2 and " BL" in line]


def test_clean_tree_exits_0(cli, fixtures):
    """Auditing correct code prints `All checks passed.` and exits 0."""
    result = cli(fixtures / "good", cwd=fixtures)
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}{result.stderr}"
    assert result.stdout.strip().splitlines()[-1] == "All checks passed.", result.stdout


def test_findings_exit_1_with_ruff_style_lines(cli, fixtures):
    """Findings print as `path:line:col CODE message (lab N)` and a count, exit code 1."""
    result = cli("bad", cwd=fixtures)
    assert result.returncode == 1, f"exit {result.returncode}\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"Found {len(lines) - 1} problems.", lines[-1]
    first = lines[0]
    location, code = first.split(" ", 2)[:2]
    path, line, column = location.rsplit(":", 2)
    assert path.startswith("bad/") and line.isdigit() and column.isdigit(), f"not path:line:col: {first}"
    assert code in RULES and first.endswith(f"(lab {RULES[code].lab})"), f"code or lab missing: {first}"


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
    assert set(_codes(all_rules.stdout)) == set(RULES), all_rules.stdout
    without = cli("bad", "--ignore", "BL001,BL003", cwd=fixtures)
    assert set(_codes(without.stdout)) == set(RULES) - {"BL001", "BL003"}, without.stdout
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
    """`reference-models` replaces the default Category with the models a project names."""
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


def test_broken_files_are_reported_and_skipped(cli, fixtures):
    """A syntax error, undecodable bytes and a non-UTF-8 script are named on stderr and skipped, no crash."""
    result = cli("broken", cwd=fixtures)
    assert result.returncode == 0, f"skipped files alone must not fail the run:\n{result.stderr}"
    for name in ("syntax_error.py", "undecodable.py", "latin1-entrypoint.sh"):
        assert f"broken/{name}: skipped, cannot parse (" in result.stderr, f"{name} not reported:\n{result.stderr}"
    assert "Traceback" not in result.stderr and "All checks passed." in result.stdout, result.stderr


def test_findings_still_count_next_to_broken_files(cli, fixtures):
    """Skipped files do not hide the findings of the files that parsed."""
    result = cli("broken", "bad/lab3", cwd=fixtures)
    assert result.returncode == 1 and set(_codes(result.stdout)) == {"BL003"}, result.stdout + result.stderr


def test_json_output(cli, fixtures):
    """--format json prints one JSON document with findings, skipped files and a summary."""
    result = cli("bad", "broken", "--format", "json", cwd=fixtures)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    findings = document["findings"]
    assert len(findings) == document["summary"]["problems"] > 0, document["summary"]
    assert set(findings[0]) == {"code", "lab", "path", "line", "column", "message"}, findings[0]
    assert {item["path"] for item in document["skipped"]} == {
        "broken/syntax_error.py", "broken/undecodable.py", "broken/latin1-entrypoint.sh"
    }, document["skipped"]
    assert f"Found {len(findings)} problems." in result.stderr, "the summary goes to stderr in JSON mode"


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
    result = cli("bad", "--format", "sarif", cwd=fixtures)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    run = document["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == list(RULES), "the driver must list every rule"
    for sarif_result in run["results"]:
        assert rules[sarif_result["ruleIndex"]]["id"] == sarif_result["ruleId"], "ruleIndex points at another rule"
        location = sarif_result["locations"][0]["physicalLocation"]
        uri = location["artifactLocation"]["uri"]
        assert (fixtures / uri).is_file(), f"{uri} is not a path relative to the working directory"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(document, SARIF_SUBSET_SCHEMA)


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
