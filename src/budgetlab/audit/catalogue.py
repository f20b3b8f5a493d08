"""Texts about the rules made from the registry alone, for the help and the docs page, so neither counts by hand.

docs/audit.md holds generated blocks between `<!-- NAME:start -->` and
`<!-- NAME:end -->` markers; `python -m budgetlab.audit.catalogue docs/audit.md`
rewrites them, and tests/audit/test_audit_docs.py fails while they differ.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from budgetlab.audit.rules import RULES, SELECTABLE

DESCRIPTION = "Find the failures the budgetlab labs teach in your own code base (static: nothing is imported or run)."


def code_span() -> str:
    """"BL001–BL007": the selectable codes, first to last."""
    return f"{SELECTABLE[0]}–{SELECTABLE[-1]}"


def rules_table() -> str:
    """One row per rule: code, name, the lab that teaches it, default severity."""
    lines = ["| Code | Name | Lab | Severity |", "|---|---|---|---|"]
    for rule in RULES.values():
        lab = f"[lab {rule.lab}](labs/lab{rule.lab}.md)" if rule.lab is not None else "–"
        severity = rule.severity + (" or error" if rule.error_when else "")
        lines.append(f"| [{rule.code}](#{rule.anchor}) | `{rule.name}` | {lab} | {severity} |")
    return "\n".join(lines)


def severity_table() -> str:
    """Which findings are errors and which warnings."""
    errors = [f"{rule.code} (`{rule.name}`)" for rule in RULES.values() if rule.severity == "error"]
    errors += [f"{rule.code} {rule.error_when.split(' (')[0]}" for rule in RULES.values() if rule.error_when]
    warnings = [rule.code + (" otherwise" if rule.error_when else "") for rule in RULES.values()
                if rule.severity == "warning"]
    return "\n".join(["| Severity | Given to |", "|---|---|", f"| error | {'; '.join(errors)} |",
                      f"| warning | {', '.join(warnings)} |"])


def select_example() -> str:
    """The `select` line of the configuration example: every selectable rule, which is the default."""
    return "select = [" + ", ".join(f'"{code}"' for code in SELECTABLE) + "]   # the default: all"


BLOCKS = {"rules-table": rules_table, "severity-table": severity_table}


def render(text: str) -> str:
    """The page with every generated block, and the select example, rewritten from the registry."""
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"no <!-- {name}:start --> ... <!-- {name}:end --> markers")
        text = pattern.sub(lambda match: match.group(1) + make() + "\n" + match.group(2), text)
    return re.sub(r"^select = \[.*$", select_example(), text, flags=re.M)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the generated blocks of the given pages; one line on stderr and exit 2 on bad input."""
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        sys.stderr.write("usage: python -m budgetlab.audit.catalogue PAGE.md...\n")
        return 2
    for name in paths:
        path = Path(name)
        try:
            text = path.read_text(encoding="utf-8")
            path.write_text(render(text), encoding="utf-8")
        except (OSError, ValueError) as exc:
            sys.stderr.write(f"catalogue: {name}: {exc}\n")
            return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
