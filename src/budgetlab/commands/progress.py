"""The learner's progress in .budgetlab/progress.json: attempts, passes, hints, time spent.

Written atomically. A corrupt file is moved aside with a warning and a
fresh one started, so progress tracking never stops a learner.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from budgetlab.paths import progress_dir, write_json

VERSION = 1


def progress_file() -> Path:
    return progress_dir() / "progress.json"


def load(warn=lambda message: None) -> dict:
    """Return the progress record; a corrupt file is backed up and replaced."""
    path = progress_file()
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("labs"), dict):
            raise ValueError("not a progress record")
        return data
    except FileNotFoundError:
        return {"version": VERSION, "labs": {}}
    except (OSError, ValueError):
        backup = path.with_name(f"progress.corrupt-{time.strftime('%Y%m%d-%H%M%S')}.json")
        os.replace(path, backup)
        warn(f"progress file was unreadable; kept it as {backup.name} and started a new one")
        return {"version": VERSION, "labs": {}}


def save(data: dict) -> None:
    write_json(progress_file(), data)


def lab_entry(data: dict, number: int) -> dict:
    entry = data["labs"].setdefault(str(number), {})
    entry.setdefault("attempts", 0)
    entry.setdefault("hints_used", 0)
    entry.setdefault("passed", False)
    entry.setdefault("status", "not started")
    return entry


def record_check(number: int, outcome, warn=lambda m: None) -> None:
    """Count a check (a checking.Outcome) as an attempt, with its result, unless the machine kept it from grading."""
    if not outcome.graded:
        return
    passed = outcome.exit_code == 0
    data = load(warn)
    entry = lab_entry(data, number)
    now = time.time()
    entry.setdefault("first_seen", now)
    entry["attempts"] += 1
    entry["last_check"] = now
    entry["last_result"] = f"{outcome.passed}/{len(outcome.kept_results())}"
    if passed and not entry["passed"]:
        entry["passed_at"] = now
        entry["seconds_to_pass"] = round(now - entry["first_seen"])
    entry["passed"] = entry["passed"] or passed
    entry["status"] = "passed" if entry["passed"] else "failing"
    save(data)


def record_hint(number: int, warn=lambda m: None) -> int:
    """Count one more hint seen for lab N and return how many have been seen."""
    data = load(warn)
    entry = lab_entry(data, number)
    entry.setdefault("first_seen", time.time())
    entry["hints_used"] += 1
    save(data)
    return entry["hints_used"]


def mark_started(number: int, warn=lambda m: None) -> None:
    data = load(warn)
    entry = lab_entry(data, number)
    entry.setdefault("first_seen", time.time())
    if entry["status"] == "not started":
        entry["status"] = "started"
    save(data)


def note_once(key: str, message: str, warn=lambda m: None) -> None:
    """Say `message` through `warn` the first time `key` comes up for this learner, never again."""
    data = load(warn)
    said = data.setdefault("notes", [])
    if key in said:
        return
    warn(message)
    said.append(key)
    save(data)
