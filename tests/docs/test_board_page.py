"""The room board page in Debian's Chromium: a live table without reloads, stuck learners, ranked blockers, escaped names, offline."""

from __future__ import annotations

import pytest
from docs_support import SCREENSHOTS

from budgetlab.board.rig import RoomBoard, check_result, post

pytestmark = pytest.mark.browser

ADA, BO, CY = "a" * 32, "b" * 32, "c" * 32
HOSTILE = '<script>window.owned = 1</script><img src=x onerror="window.owned = 2">'
SENTENCES = ["Every job ends in a final state.", "The ending says how far it got.", "Small batches finish."]


@pytest.fixture
def board_page(open_probe, tmp_path):
    """The facilitator's page of a fresh board flagging anyone failing (stuck after 0 min), blocking anything not local."""
    with RoomBoard(tmp_path / "facilitator", "--stuck-after", "0") as board, \
            open_probe((board.base + "/",), accept_downloads=True, viewport={"width": 1280, "height": 800}) as probe:
        page = probe.page
        page.goto(board.page_url)
        page.wait_for_selector("body[data-drawn]")
        page.board, page.errors, page.external = board, probe.console_errors, probe.external_requests
        yield page


def send(page, learner, name, lab, passed, total=3, **kwargs):
    status, answer = post(page.board.base, page.board.token,
                          check_result(learner, name, lab, passed, total, sentences=SENTENCES[:total], **kwargs))
    assert status == 201, answer


def cell(page, learner, lab):
    return page.locator(f'tr[data-learner="{learner}"] td[data-lab="{lab}"]')


def test_the_table_fills_and_changes_without_a_reload(board_page):
    """A result appears as 'failing n/m', a later pass turns the cell 'passed', all while the page stays loaded."""
    page = board_page
    page.evaluate("window.sameDocument = true")
    send(page, ADA, "Ada", 2, 1)
    page.wait_for_selector(f'tr[data-learner="{ADA}"]')
    assert cell(page, ADA, 2).get_attribute("data-state") == "failing"
    assert cell(page, ADA, 2).inner_text().startswith("failing 2/3")
    assert cell(page, ADA, 1).inner_text() == "not started"
    send(page, ADA, "Ada", 2, 3)
    page.wait_for_selector(f'tr[data-learner="{ADA}"] td[data-lab="2"][data-state="passed"]')
    assert page.evaluate("window.sameDocument") is True, "the page reloaded instead of updating"
    assert not page.errors, page.errors
    assert not page.external, f"the board tried to reach the internet: {page.external}"


def test_stuck_learners_are_flagged_and_blockers_are_ranked(board_page):
    """A learner failing a check past the chosen minutes is flagged; each lab ranks failing checks by learners held back."""
    page = board_page
    send(page, ADA, "Ada", 2, 0)
    send(page, BO, "Bo", 2, 1)
    send(page, CY, "Cy", 2, 3)
    page.wait_for_selector(f'tr[data-learner="{CY}"]')
    page.wait_for_selector(f'tr.stuck[data-learner="{ADA}"]')
    assert "stuck 0 min on lab 2: Every job ends in a final state." in page.locator(f'tr[data-learner="{ADA}"]').inner_text()
    assert page.locator(f'tr.stuck[data-learner="{CY}"]').count() == 0, "a learner who passed is not stuck"
    blockers = page.locator('article[data-lab="2"] li.blocker').all_inner_texts()
    assert [text.splitlines()[0] for text in blockers] == [
        "2 of 3 fail: Small batches finish.", "2 of 3 fail: The ending says how far it got.",
        "1 of 3 fail: Every job ends in a final state."]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "board.png"), full_page=True)
    page.fill("#stuck-minutes", "10")
    page.wait_for_selector(f'tr[data-learner="{ADA}"]:not(.stuck)')


def test_names_and_symptoms_with_markup_are_shown_as_text(board_page):
    """A learner named like a script tag is shown literally; nothing in the name runs."""
    page = board_page
    send(page, ADA, HOSTILE[:40], 1, 1, total=2)
    page.wait_for_selector(f'tr[data-learner="{ADA}"]')
    assert page.locator(f'tr[data-learner="{ADA}"] th').inner_text().startswith(HOSTILE[:40])
    assert page.evaluate("window.owned") is None, "markup in a learner's name ran on the facilitator's page"
    assert page.locator("#board-body script, #board-body img").count() == 0
    assert not page.errors, page.errors


def test_exports_download_and_closing_the_room_refuses_results(board_page):
    """The export links download the report CSV; 'Close the room' marks it closed and later results get 410."""
    page = board_page
    send(page, ADA, "Ada", 1, 3)
    page.wait_for_selector(f'tr[data-learner="{ADA}"]')
    with page.expect_download() as download:
        page.click("#export-csv")
    text = open(download.value.path()).read()
    assert text.splitlines()[0] == "learner,lab,title,status,attempts,hints_used,minutes_to_pass"
    assert "Ada,1,The limit nobody chose,passed,1,0,1.0" in text
    page.on("dialog", lambda dialog: dialog.accept())
    page.click("#close-room")
    page.wait_for_selector("#room-status.closed")
    status, _ = post(page.board.base, page.board.token, check_result(BO, "Bo", 1, 1, 3))
    assert status == 410


def test_the_guides_screenshot_is_made_by_its_script(tmp_path):
    """scripts/board_screenshot.py replays a room into a real board and writes the two PNGs the facilitator guide shows."""
    import subprocess
    import sys

    from docs_support import ROOT

    output = tmp_path / "board.png"
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "board_screenshot.py"), "--output", str(output)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    script = _board_script()
    for suffix, (width, height) in script.SHOTS.items():
        shot = script.shot_path(output, suffix)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"the script wrote no {shot.name}"
        from PIL import Image

        with Image.open(shot) as image:
            assert image.size == (width, height), f"{shot.name} is {image.size}, not the {width}x{height} the script asks"
        assert script.stored_fingerprint(shot) == script.fingerprint(), f"{shot.name} carries no fingerprint of its inputs"


def test_the_guide_shows_the_current_board():
    """The pictures in docs/assets were taken from today's labs, transcripts and board page, and the guide shows both."""
    from docs_support import DOCS

    script = _board_script()
    guide = (DOCS / "facilitator.md").read_text(encoding="utf-8")
    for suffix in script.SHOTS:
        shot = script.shot_path(DOCS / "assets" / "board.png", suffix)
        assert f"assets/{shot.name}" in guide, f"the facilitator guide no longer shows {shot.name}"
        assert shot.exists() and script.stored_fingerprint(shot) == script.fingerprint(), (
            f"docs/assets/{shot.name} shows an older board (a lab's title, a transcript or the board's page changed): "
            "run python scripts/board_screenshot.py")


def _board_script():
    from docs_support import load_module

    return load_module("scripts/board_screenshot.py")


def test_on_a_phone_the_page_keeps_its_width_and_the_table_scrolls_in_its_own_box(board_page):
    """At 380 px the join command wraps and the learners' table, a column per lab, scrolls inside its box."""
    page = board_page
    page.set_viewport_size({"width": 380, "height": 800})
    send(page, ADA, "Ada Lovelace-Byron of Ockham", 2, 1)
    page.wait_for_selector(f'tr[data-learner="{ADA}"]')
    widths = page.evaluate("""() => ({page: document.documentElement.scrollWidth, view: window.innerWidth,
        join: document.getElementById("join-command").getBoundingClientRect().right,
        table: document.getElementById("board").scrollWidth,
        box: document.getElementById("board").parentElement.clientWidth})""")
    assert widths["page"] <= widths["view"], f"the page is {widths['page']} px wide in a {widths['view']} px phone"
    assert widths["join"] <= widths["view"], f"the join command ends at {widths['join']:.0f} px"
    assert widths["table"] > widths["box"], "the table fits a phone here, so this test no longer shows it scroll"
