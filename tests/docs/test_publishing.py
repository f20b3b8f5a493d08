"""The site is published where the audit's links point: .readthedocs.yaml is valid and builds strictly."""

from __future__ import annotations

import shutil
import subprocess

import yaml
from docs_support import ROOT

CONFIG = ROOT / ".readthedocs.yaml"


def test_readthedocs_yaml_follows_read_the_docs_schema():
    """.readthedocs.yaml validates against the schema check-jsonschema ships for Read the Docs (no network)."""
    program = shutil.which("check-jsonschema", path=str(ROOT / ".venv" / "bin")) or shutil.which("check-jsonschema")
    assert program, "check-jsonschema is missing; it comes with the test extras"
    result = subprocess.run([program, "--builtin-schema", "vendor.readthedocs", str(CONFIG)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, f".readthedocs.yaml is not valid:\n{result.stdout}{result.stderr}"


def test_the_schema_check_rejects_a_broken_configuration(tmp_path):
    """The same check fails on a configuration Read the Docs would refuse, so the test above can fail."""
    broken = tmp_path / ".readthedocs.yaml"
    broken.write_text("version: 2\nmkdocs:\n  fail_on_warning: maybe\n", encoding="utf-8")
    program = shutil.which("check-jsonschema", path=str(ROOT / ".venv" / "bin")) or shutil.which("check-jsonschema")
    result = subprocess.run([program, "--builtin-schema", "vendor.readthedocs", str(broken)],
                            capture_output=True, text=True, check=False)
    assert result.returncode != 0, "a configuration with fail_on_warning: maybe passed the schema"


def test_the_published_build_is_strict_and_at_the_audits_address():
    """Read the Docs builds mkdocs.yml with --strict, fetches Mermaid first, and publishes at the audit's link base."""
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    assert config["mkdocs"] == {"configuration": "mkdocs.yml", "fail_on_warning": True}, config["mkdocs"]
    assert "bash scripts/vendor_docs_assets.sh" in config["build"]["jobs"]["pre_build"]
    from budgetlab.audit.rules import DOCS_URL

    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    base = DOCS_URL.removesuffix("audit/")
    assert f'site_url: !ENV [READTHEDOCS_CANONICAL_URL, "{base}"]' in mkdocs, f"mkdocs.yml's site_url is not {base}"
    assert (ROOT / "docs" / "audit.md").is_file(), "the audit's links point at audit/, which the site does not build"
    page = (ROOT / "docs" / "publishing.md").read_text(encoding="utf-8")
    assert base in page and "readthedocs.org" in page, "docs/publishing.md does not say where the site lives"
