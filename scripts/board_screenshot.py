"""Regenerates docs/assets/board.png, the room board as the facilitator guide shows it, from a replayed session.

A fictional room of fourteen is replayed into a fresh board, an hour into
the agenda: everyone has met lab 1, lab 2 is under way. Every sentence and
symptom comes from the real check transcripts in docs/transcripts/ (the
pristine labs' output), so the picture shows what `check` really posts.
Then `budgetlab facilitate` serves that room and Debian's Chromium takes
the screenshots of the part that matters (what holds the room back), one
as a laptop shows the board and one as a phone does, each about as wide as
the guide's page there, so that its text reads at its own size. The PNG carries a fingerprint of
everything it was made from (the labs' headings, the transcripts it
replays, the board's template and styles); the suite recomputes it, so a
picture that no longer shows the current board fails until it is re-taken.

Usage:
    python scripts/board_screenshot.py                 # writes docs/assets/board.png and board-phone.png
    python scripts/board_screenshot.py --output X.png  # writes X.png and X-phone.png (the docs test does)
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from budgetlab import labs  # noqa: E402

TRANSCRIPTS = ROOT / "docs" / "transcripts"
CHROMIUM = "/usr/bin/chromium"
NAMES = ["Ada", "Bilal", "Chen", "Dana", "Emeka", "Farah", "Gustav", "Hana", "Ivo", "Jonas", "Kemal", "Lea",
         "Mara", "Nils"]


# The two pictures: (viewport width, how much of the page's top it keeps), for a laptop and for a phone,
# each no wider than the page shows it there, so its text is read at about its own size.
SHOTS = {"": (1000, 760), "-phone": (380, 1100)}
# The PNG text chunk that holds the fingerprint.
FINGERPRINT_KEY = "budgetlab-inputs"


def pictured() -> tuple[int, int]:
    """The numbers of the labs the replayed hour reaches: the workshop's first two."""
    first, second = (lab.number for lab in labs.load(ROOT)[:2])
    return first, second


def inputs() -> list[Path]:
    """Every file whose change changes the picture: the transcripts it replays, and the board's page."""
    board = ROOT / "src" / "budgetlab" / "board"
    return [TRANSCRIPTS / f"lab{lab}-check-starter.txt" for lab in pictured()] + sorted(
        path for path in board.rglob("*") if path.suffix in (".html", ".css", ".js"))


def fingerprint() -> str:
    """Return the hash of what the picture shows: the labs' headings and every input file."""
    digest = hashlib.sha256()
    for lab in labs.load(ROOT):
        digest.update(f"{lab.number} {lab.title}\n".encode())
    for path in inputs():
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def stored_fingerprint(png: Path) -> str | None:
    """Return the fingerprint a picture carries, None when it carries none."""
    from PIL import Image

    with Image.open(png) as image:
        return image.text.get(FINGERPRINT_KEY)


def starter_results(lab: int) -> list[dict]:
    """Return the checks of a pristine lab as `check` reported them, read from its stored transcript."""
    results = []
    for line in (TRANSCRIPTS / f"lab{lab}-check-starter.txt").read_text().splitlines():
        if line.startswith(("  ✓ ", "  ✗ ")):
            results.append({"title": line[4:], "outcome": "passed" if line[2] == "✓" else "failed", "symptom": ""})
        elif line.startswith("      ") and results:
            results[-1]["symptom"] = line.strip()
    return results


def fixed(results: list[dict], *indices: int) -> list[dict]:
    """Return the results with the checks at these positions passing (all of them when none are given)."""
    return [dict(r, outcome="passed", symptom="") if (not indices or i in indices) else r
            for i, r in enumerate(results)]


def replay(session_start: float) -> None:
    """Post the room's hour of results, each at the minute it happened."""
    from budgetlab.board import payload, services

    room = services.room_open(fresh=True)
    first, second = pictured()
    lab1, lab2 = starter_results(first), starter_results(second)
    rng = random.Random(20)

    def send(index: int, lab: int, minute: float, results: list[dict], lab_started: float, hints: int = 0):
        passed = all(r["outcome"] == "passed" for r in results)
        body = payload.build(lab, results, None, 0 if passed else 1, hints, minute - lab_started,
                             f"{index + 1:032x}", NAMES[index])
        services.post_record(room, payload.validate(body), received_at=session_start + minute * 60)

    for index in range(len(NAMES)):
        send(index, first, rng.uniform(13, 18), lab1, 10, 0)
        if NAMES[index] == "Ivo":
            # Still on lab 1, with the same check failing since minute 24.
            send(index, first, 24, fixed(lab1, 0, 1, 2, 3), 10, 2)
            send(index, first, 41, fixed(lab1, 0, 1, 2, 3), 10, 3)
            continue
        send(index, first, rng.uniform(22, 36), fixed(lab1), 10, rng.randint(0, 2))
        if NAMES[index] in ("Bilal", "Farah"):
            # Checked early; the helper re-raises now, but the jobs still do not end failed.
            send(index, second, rng.uniform(41, 42), lab2, 40, 0)
            send(index, second, rng.uniform(46, 47), fixed(lab2, 2, 3, 4), 40, 1)
            send(index, second, rng.uniform(53, 57), fixed(lab2, 2, 3, 4), 40, 2)
            continue
        send(index, second, rng.uniform(47, 52), lab2, 40, 0)
        if NAMES[index] in ("Chen", "Hana", "Lea"):
            send(index, second, rng.uniform(53, 57), fixed(lab2), 40, rng.randint(0, 1))
        elif NAMES[index] in ("Dana", "Jonas", "Kemal"):
            send(index, second, rng.uniform(53, 57), fixed(lab2, 1, 2, 3, 4), 40, 2)


def shot_path(output: Path, suffix: str) -> Path:
    """Return where one of the pictures goes: board.png, board-phone.png."""
    return output.with_name(f"{output.stem}{suffix}{output.suffix}")


def _stamp(png: Path) -> None:
    """Write the fingerprint into the picture's text chunk."""
    from PIL import Image, PngImagePlugin

    info = PngImagePlugin.PngInfo()
    info.add_text(FINGERPRINT_KEY, fingerprint())
    with Image.open(png) as image:
        image.load()
        image.save(png, pnginfo=info, optimize=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "assets" / "board.png")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: run scripts/ensure_chromium.sh", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="board-screenshot-") as state:
        # The replay and the board both keep the room under this folder, never in the checkout's .budgetlab/.
        os.environ["BUDGETLAB_STATE_DIR"] = state
        from budgetlab.board import server

        server.configure()
        replay(time.time() - 58 * 60)
        from django.db import connections

        connections.close_all()
        from playwright.sync_api import sync_playwright

        from budgetlab.board.rig import RoomBoard

        with RoomBoard(Path(state), "--stuck-after", "15") as board, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
            args.output.parent.mkdir(parents=True, exist_ok=True)
            for suffix, (width, height) in SHOTS.items():
                page = browser.new_page(viewport={"width": width, "height": height}, color_scheme="light")
                page.goto(board.page_url)
                page.wait_for_selector('tr[data-learner] + tr')
                page.wait_for_selector("tr.stuck")
                path = shot_path(args.output, suffix)
                page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": width, "height": height})
                page.close()
                _stamp(path)
                print(f"wrote {path}")
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
