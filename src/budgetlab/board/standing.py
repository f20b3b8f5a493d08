"""Where each learner stands on each lab, folded from their posted results, and what the room board shows from it.

Plain functions over plain dicts, with the time passed in: the board's
Django code stores and loads standings, these decide what they mean.
"""

from __future__ import annotations

NOT_STARTED, FAILING, PASSED, CANNOT_GRADE = "not started", "failing", "passed", "could not grade"


def is_pass(post: dict) -> bool:
    return post["exit_code"] == 0 and bool(post["checks"]) and all(c["passed"] for c in post["checks"])


def fold(previous: dict | None, post: dict, received_at: float) -> dict:
    """Return a learner's standing on one lab after one more posted result (validated by payload.validate)."""
    standing = dict(previous or {"attempts": 0, "posts": 0, "passed": False, "minutes_to_pass": None,
                                 "failing_since": {}})
    standing["posts"] += 1
    standing["hints_used"] = post["hints_used"]
    standing["minutes"] = post["minutes"]
    standing["last_at"] = received_at
    failing = [c for c in post["checks"] if not c["passed"]]
    standing["latest"] = {"passed": sum(c["passed"] for c in post["checks"]), "total": len(post["checks"]),
                          "failing": [[c["sentence"], c["symptom"]] for c in failing],
                          "could_not_grade": post["could_not_grade"]}
    if post["could_not_grade"] or not post["checks"]:
        # A check that could not grade says nothing about the code: the stuck clocks keep running.
        return standing
    standing["attempts"] += 1
    if is_pass(post) and not standing["passed"]:
        standing["passed"] = True
        standing["minutes_to_pass"] = round(post["minutes"], 1)
    since = standing["failing_since"]
    # A check's clock starts when it first fails and restarts whenever it passes in between.
    standing["failing_since"] = {c["sentence"]: since.get(c["sentence"], received_at) for c in failing}
    return standing


def cell(standing: dict | None) -> dict:
    """Return one table cell: its state, a short label, and the figures behind it."""
    if standing is None:
        return {"state": NOT_STARTED, "label": NOT_STARTED, "attempts": 0, "hints_used": 0, "minutes": None}
    latest = standing["latest"]
    if standing["passed"]:
        state, label = PASSED, PASSED
    elif standing["attempts"] == 0:
        state, label = CANNOT_GRADE, CANNOT_GRADE
    else:
        state, label = FAILING, f"failing {latest['total'] - latest['passed']}/{latest['total']}"
    return {"state": state, "label": label, "attempts": standing["attempts"], "hints_used": standing["hints_used"],
            "minutes": standing["minutes"]}


def stuck_on(standing: dict | None, now: float, stuck_minutes: float) -> dict | None:
    """Return the check a learner has failed without a break for at least stuck_minutes, or None."""
    if standing is None or standing["passed"] or not standing["failing_since"]:
        return None
    sentence, since = min(standing["failing_since"].items(), key=lambda item: item[1])
    minutes = (now - since) / 60
    return {"sentence": sentence, "minutes": round(minutes, 1)} if minutes >= stuck_minutes else None


def board(labs: list[tuple[int, str]], learners: list[dict], standings: dict, now: float,
          stuck_minutes: float) -> dict:
    """Return everything the board page shows.

    learners: dicts with learner (id), name, last_lab (lab of their latest
    post); standings: {(learner id, lab number): standing}. A learner is
    stuck only on the lab they posted last: one who moved on is not stuck
    on the lab they left.
    """
    rows = []
    for learner in sorted(learners, key=lambda item: (item["name"].casefold(), item["learner"])):
        current = standings.get((learner["learner"], learner["last_lab"]))
        stuck = stuck_on(current, now, stuck_minutes)
        rows.append({"learner": learner["learner"], "name": learner["name"],
                     "stuck": dict(stuck, lab=learner["last_lab"]) if stuck else None,
                     "cells": [dict(cell(standings.get((learner["learner"], number))), lab=number)
                               for number, _ in labs]})
    return {"stuck_minutes": stuck_minutes, "learners": rows,
            "labs": [lab_summary(number, title, [standings.get((item["learner"], number)) for item in learners])
                     for number, title in labs]}


def lab_summary(number: int, title: str, standings: list[dict | None]) -> dict:
    """Return one lab's counts and its failing checks, ranked by how many learners they hold back now."""
    checked = [s for s in standings if s is not None and s["attempts"]]
    held: dict[str, int] = {}
    symptoms: dict[str, str] = {}
    for standing in checked:
        if standing["passed"]:
            continue
        for sentence, symptom in standing["latest"]["failing"]:
            held[sentence] = held.get(sentence, 0) + 1
            symptoms.setdefault(sentence, symptom)
    ranked = sorted(held.items(), key=lambda item: (-item[1], item[0]))
    return {"number": number, "title": title, "checked": len(checked),
            "passed": sum(1 for s in checked if s["passed"]),
            "blockers": [{"sentence": sentence, "symptom": symptoms[sentence], "count": count,
                          "text": f"{count} of {len(checked)} fail: {sentence}"} for sentence, count in ranked]}


def report_rows(labs: list[tuple[int, str]], learners: list[dict], standings: dict) -> list[dict]:
    """Return the rows of `budgetlab report --merge` for the whole room, one per learner and lab."""
    rows = []
    for number, title in labs:
        for learner in sorted(learners, key=lambda item: (item["name"].casefold(), item["learner"])):
            standing = standings.get((learner["learner"], number))
            if standing is None:
                status, attempts, hints, to_pass = NOT_STARTED, 0, 0, None
            else:
                status = PASSED if standing["passed"] else (FAILING if standing["attempts"] else "started")
                attempts, hints, to_pass = standing["attempts"], standing["hints_used"], standing["minutes_to_pass"]
            rows.append({"learner": learner["name"], "lab": number, "title": title, "status": status,
                         "attempts": attempts, "hints_used": hints, "minutes_to_pass": to_pass})
    return rows
