"""`budgetlab facilitate`: serve the room board from this process until Ctrl-C.

Django's own threaded WSGI server (the one behind runserver) serves the
board app with the board's settings; the port is bound before Django is
set up, so the printed join command always names the real port.
"""

from __future__ import annotations

import os
import socket

from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

from budgetlab.errors import BudgetlabError
from budgetlab.paths import board_dir

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class RoomRequestHandler(WSGIRequestHandler):
    # A connection that sends nothing for this long is dropped, so idle sockets cannot pile up threads.
    timeout = 30


class RoomServer(ThreadedWSGIServer):
    # A room's machines connect at once after a shared `check`; the default backlog of 10 would drop some.
    request_queue_size = 256


def lan_address() -> str:
    """Return this machine's address on its default route, without sending a packet (UDP connect only)."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere, only consulted
        return probe.getsockname()[0]
    except OSError:
        return "THIS-MACHINE"
    finally:
        probe.close()


def bind(host: str, port: int) -> RoomServer:
    try:
        return RoomServer((host, port), RoomRequestHandler, ipv6=":" in host)
    except OSError as exc:
        raise BudgetlabError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                             "choose another with --port") from None


def configure(stuck_minutes: float = 15.0, on_lan: bool = False) -> None:
    """Set this process's Django up with the board's own settings and bring its SQLite file up to date."""
    os.environ["DJANGO_SETTINGS_MODULE"] = "budgetlab.board.settings"
    os.environ["BUDGETLAB_BOARD_DB"] = str(board_dir() / "board.sqlite3")
    os.environ["BUDGETLAB_BOARD_HOSTS"] = "*" if on_lan else "127.0.0.1,localhost,[::1]"
    os.environ["BUDGETLAB_BOARD_STUCK_MINUTES"] = f"{stuck_minutes:g}"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def serve(host: str, port: int, stuck_minutes: float, fresh: bool, say) -> int:
    """Open (or resume) the room, print how to reach it, and serve until Ctrl-C; return the exit code."""
    server = bind(host, port)
    port = server.server_address[1]
    on_lan = host not in LOOPBACK
    reach = lan_address() if host in ("0.0.0.0", "::") else host
    join_url_base = f"http://{'[' + reach + ']' if ':' in reach else reach}:{port}"
    try:
        configure(stuck_minutes, on_lan)
        from django.core.wsgi import get_wsgi_application

        from budgetlab.board import selectors, services

        room = services.room_open(fresh)
        join_url = f"{join_url_base}/join/{room.token}"
        from django.conf import settings

        settings.BOARD_JOIN_URL = join_url
        labs = selectors.room_labs()
        server.set_app(get_wsgi_application())
        if on_lan:
            say(f"serving the room on the LAN: every machine that can reach {reach}:{port} can connect; "
                "results need the room token, the board needs your key")
        else:
            say(f"serving on {host}:{port}, this machine only; add --host 0.0.0.0 to let the room reach it")
        say(f"room board for labs {', '.join(str(n) for n, _ in labs)}; stuck after {stuck_minutes:g} min "
            "failing the same check")
        say(f"board (keep this link to yourself): http://{'127.0.0.1' if on_lan else host}:{port}/?key={room.key}")
        say("learners join with:")
        say(f"  budgetlab join {join_url} --as YOUR-NAME")
        say("stop with Ctrl-C")
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
    finally:
        server.server_close()
    say("board stopped; the room stays open: 'budgetlab facilitate' again resumes it with the same join command")
    return 0
