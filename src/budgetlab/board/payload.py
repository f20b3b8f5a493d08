"""The one check result a learner's machine sends to the room board: how it is built, and how the board checks it.

A result names the lab, each check by its learner-facing sentence with
passed or failed, the symptom line of a failed one, hints used, minutes on
the lab and the exit code. It never carries code, file contents or paths:
symptoms are cut to one line and any path in them is blanked. Standard
library only, so both sides share it without loading Django.
"""

from __future__ import annotations

import re
import uuid

# A result of a lab with a dozen checks is about 2 KB; 16 KB leaves room and
# still stops anyone from filling the facilitator's disk through the board.
MAX_BODY_BYTES = 16 * 1024
MAX_NAME = 40
MAX_SENTENCE = 200
MAX_CHECKS = 40

# A leading =, +, - or @ makes a spreadsheet run the cell as a formula when
# the facilitator opens the CSV export; a name never needs one.
_FORMULA_START = ("=", "+", "-", "@")
# Paths with at least two folders, absolute, home-relative or on a Windows drive, as error messages
# print them; a bare file name (entrypoint.sh) is the same for every learner and stays.
_PATH = re.compile(r"(?:~|[A-Za-z]:)?[\w.@+-]*(?:[\\/][\w.@+-]+){2,}[\\/]?")


class Invalid(ValueError):
    """A result or a name the board refuses; the message says why in one line."""


def name_problem(name: str) -> str | None:
    """Return why a learner's display name is refused, or None when it is fine."""
    if not isinstance(name, str) or not name.strip():
        return "a name is needed, e.g. --as Ada"
    if len(name) > MAX_NAME:
        return f"a name has at most {MAX_NAME} characters"
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "a name cannot contain control characters"
    if name.strip().startswith(_FORMULA_START):
        return "a name cannot start with =, +, - or @ (spreadsheets would run it)"
    return None


def one_line(text: str) -> str:
    """Return the first line of a learner-facing text, paths blanked, cut to a readable length."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    line = _PATH.sub("<path>", line)
    return line if len(line) <= MAX_SENTENCE else line[: MAX_SENTENCE - 1] + "…"


def build(lab: int, results: list[dict], could_not_grade: str | None, exit_code: int,
          hints_used: int, minutes: float, learner: str, name: str) -> dict:
    """Return the result of one `check` as the board stores it, from what `checking.grade` returned."""
    checks = [{"sentence": one_line(r.get("title", "")), "passed": r.get("outcome") == "passed",
               "symptom": "" if r.get("outcome") == "passed" else one_line(r.get("symptom", ""))}
              for r in results[:MAX_CHECKS]]
    return {"post_id": uuid.uuid4().hex, "learner": learner, "name": name, "lab": lab, "checks": checks,
            "could_not_grade": one_line(could_not_grade) if could_not_grade else "",
            "hints_used": hints_used, "minutes": round(minutes, 1), "exit_code": exit_code}


def of_outcome(lab: int, outcome, hints_used: int, minutes: float, learner: str, name: str) -> dict:
    """Return what the board is told of one `check` (a checking.Outcome): a broken lab's code is a failed check."""
    return build(lab, outcome.kept_results(), None if outcome.graded else outcome.could_not_grade, outcome.exit_code,
                 hints_used, minutes, learner, name)


def validate(data: object) -> dict:
    """Return a clean copy of a posted result, or raise Invalid with the first thing wrong with it."""
    if not isinstance(data, dict):
        raise Invalid("the body is not a JSON object")
    problem = name_problem(data.get("name"))
    if problem:
        raise Invalid(problem)
    for key in ("post_id", "learner"):
        value = data.get(key)
        if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{32}", value):
            raise Invalid(f"{key} must be 32 hex digits")
    clean = {"post_id": data["post_id"], "learner": data["learner"], "name": data["name"].strip()}
    for key, low, high in (("lab", 1, 99), ("hints_used", 0, 999), ("exit_code", 0, 255)):
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise Invalid(f"{key} must be a whole number from {low} to {high}")
        clean[key] = value
    minutes = data.get("minutes")
    if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or not 0 <= minutes <= 100_000:
        raise Invalid("minutes must be a number from 0 to 100000")
    clean["minutes"] = float(minutes)
    checks = data.get("checks")
    if not isinstance(checks, list) or len(checks) > MAX_CHECKS:
        raise Invalid(f"checks must be a list of at most {MAX_CHECKS}")
    clean["checks"] = []
    for check in checks:
        if not isinstance(check, dict) or not isinstance(check.get("passed"), bool) \
                or not isinstance(check.get("sentence"), str) or not isinstance(check.get("symptom", ""), str):
            raise Invalid("each check needs a sentence, passed true or false, and a symptom")
        clean["checks"].append({"sentence": one_line(check["sentence"]) or "unnamed check",
                                "passed": check["passed"],
                                "symptom": "" if check["passed"] else one_line(check.get("symptom", ""))})
    cannot = data.get("could_not_grade", "")
    if not isinstance(cannot, str):
        raise Invalid("could_not_grade must be text")
    clean["could_not_grade"] = one_line(cannot)
    return clean
