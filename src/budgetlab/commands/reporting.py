"""`budgetlab report`: one learner's progress, and a facilitator's cohort table from many reports."""

from __future__ import annotations

import csv
import getpass
import io
import json
from pathlib import Path

from budgetlab import labs
from budgetlab.commands import progress
from budgetlab.errors import BudgetlabError

COLUMNS = ["learner", "lab", "title", "status", "attempts", "hints_used", "minutes_to_pass"]


def learner_rows(warn=lambda m: None) -> list[dict]:
    data = progress.load(warn)
    learner = getpass.getuser()
    rows = []
    for lab in labs.load():
        entry = progress.lab_entry(data, lab.number)
        seconds = entry.get("seconds_to_pass")
        rows.append({"learner": learner, "lab": lab.number, "title": lab.title, "status": entry["status"],
                     "attempts": entry["attempts"], "hints_used": entry["hints_used"],
                     "minutes_to_pass": round(seconds / 60, 1) if seconds is not None else None})
    return rows


def render(rows: list[dict], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"report": "budgetlab", "version": 1, "rows": rows}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join("" if row[c] is None else str(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def merge(paths: list[Path], fmt: str) -> str:
    """Merge `report --format json` files into one table; a bad file is a one-line error."""
    rows = []
    for path in paths:
        try:
            data = json.loads(Path(path).read_text())
            rows.extend(data["rows"])
        except (OSError, ValueError, KeyError, TypeError):
            raise BudgetlabError(f"{path} is not a 'budgetlab report --format json' file") from None
    rows.sort(key=lambda row: (row["lab"], row["learner"]))
    return render(rows, fmt)
