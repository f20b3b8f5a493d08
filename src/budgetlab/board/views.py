"""The room board's HTTP side: learners post results with the room token; the facilitator's key shows the board."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from budgetlab.board import payload, selectors, services
from budgetlab.commands import reporting

STATIC = Path(__file__).parent / "static" / "board"
STATIC_TYPES = {"board.js": "text/javascript; charset=utf-8", "board.css": "text/css; charset=utf-8"}
# Everything the page needs comes from this server; no inline script can run, so a
# name that slips past escaping would still not execute.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _bearer(request) -> str:
    header = request.headers.get("Authorization", "")
    return header[len("Bearer "):].strip() if header.startswith("Bearer ") else ""


def _facilitator_room(request):
    return selectors.room_by_secret("key", request.headers.get("X-Board-Key") or request.GET.get("key", ""))


def _stuck_minutes(request) -> float:
    try:
        value = float(request.GET.get("stuck", settings.BOARD_STUCK_MINUTES))
    except ValueError:
        value = settings.BOARD_STUCK_MINUTES
    return min(max(value, 0.0), 600.0)


@require_GET
def page(request):
    """The board itself, for the facilitator's link; anyone else gets a line on how to join."""
    room = _facilitator_room(request)
    if room is None:
        response = HttpResponse("This is a budgetlab room board. To post your checks here, run the join "
                                "command your facilitator shows.\n", content_type="text/plain; charset=utf-8",
                                status=403)
    else:
        response = render(request, "board/board.html", {
            "join_command": f"budgetlab join {settings.BOARD_JOIN_URL} --as YOUR-NAME",
            "stuck_minutes": f"{settings.BOARD_STUCK_MINUTES:g}"})
    response["Content-Security-Policy"] = CSP
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def join_hint(request, token: str):
    """What a learner sees who opens the join URL in a browser instead of the terminal."""
    return HttpResponse(f"Run this in your terminal, in your budgetlab checkout:\n\n"
                        f"  budgetlab join {request.build_absolute_uri()} --as YOUR-NAME\n",
                        content_type="text/plain; charset=utf-8")


@require_GET
def static(request, name: str):
    if name not in STATIC_TYPES:
        return _error(404, "no such file")
    return HttpResponse((STATIC / name).read_bytes(), content_type=STATIC_TYPES[name])


@require_GET
def room(request):
    """Tell a joining learner's machine that its token is right and whether the room is open."""
    found = selectors.room_by_secret("token", _bearer(request))
    if found is None:
        return _error(401, "this room token is not the board's; copy the join command again")
    return JsonResponse({"open": found.closed_at is None, "labs": [n for n, _ in selectors.room_labs()]})


@require_POST
def results(request):
    """Take in one learner's check result."""
    found = selectors.room_by_secret("token", _bearer(request))
    if found is None:
        return _error(401, "this room token is not the board's; copy the join command again")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= 0:
        return _error(411, "a result needs a Content-Length")
    if length > payload.MAX_BODY_BYTES:
        return _error(413, f"a result is at most {payload.MAX_BODY_BYTES} bytes")
    try:
        post = payload.validate(json.loads(request.body))
    except (ValueError, payload.Invalid) as exc:
        return _error(400, f"not a check result: {exc}")
    if post["lab"] not in {n for n, _ in selectors.room_labs()}:
        return _error(400, f"this board has no lab {post['lab']}")
    try:
        stored = services.post_record(found, post)
    except services.Refused as exc:
        return _error(exc.status, str(exc))
    return JsonResponse({"stored": stored}, status=201 if stored else 200)


@require_GET
def state(request):
    """What the page draws, polled by board.js."""
    found = _facilitator_room(request)
    if found is None:
        return _error(403, "the board needs the facilitator's key")
    response = JsonResponse(selectors.board_state(found, _stuck_minutes(request)))
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def close(request):
    """Close the room: results are refused from now on; the board and its exports stay."""
    found = _facilitator_room(request)
    if found is None:
        return _error(403, "the board needs the facilitator's key")
    services.room_close(found)
    return JsonResponse({"closed": True})


@require_GET
def export(request, fmt: str):
    """The room as `budgetlab report --merge` prints it, in CSV or JSON."""
    found = _facilitator_room(request)
    if found is None:
        return _error(403, "the board needs the facilitator's key")
    text = reporting.render(selectors.report_rows(found), fmt) + "\n"
    response = HttpResponse(text, content_type="text/csv; charset=utf-8" if fmt == "csv"
                            else "application/json")
    response["Content-Disposition"] = f'attachment; filename="room-report.{fmt}"'
    return response
