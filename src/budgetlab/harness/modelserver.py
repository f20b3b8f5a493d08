"""The model stand-in as a real HTTP service: OpenAI's chat-completions endpoint on a free loopback port.

Lab code calls it through the official openai client, so everything the
client does with timeouts, retries and Retry-After happens for real. It
answers POST /v1/chat/completions in one of two modes, switched at run
time through POST /admin/mode:

    healthy  every call answers after a latency from the workshop's model of
             production calls (median 5.5 s, p99 35 s), or a fixed one
    slow     the provider's slow afternoon: calls cycle through hanging,
             sending headers and then stalling the body, 429 with
             Retry-After, and 503
    limited  the provider rate-limits: a token bucket lets `rate` calls a
             second through (at most `burst` at once), answered after
             `latency`; every other call gets 429 with Retry-After, and
             one refusal in `server_error_every` a 503 instead; with
             `eases_after`, that many seconds after its first refusal it
             lets every call through again, answered as slowly

In every mode, a call whose prompt contains a marker listed in `failing`
gets a 503, every time.

All durations, in the mode and in Retry-After, are production seconds; the
service sleeps them on the lab clock it was started with. GET /admin/stats
says how many calls it is holding for a client that is still connected,
which is how many of a worker's threads are stuck waiting on it.

    python -m budgetlab.harness.modelserver --port-file PATH --time-scale 0.005
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from budgetlab.errors import StackShortage
from budgetlab.stack import process
from kontor.latency import MODEL_CALL, keyed_rng

SLOW_PATTERN = ("hang", "slow_body", "hang", "rate_limit", "server_error")
DEFAULT_MODE = {"mode": "healthy", "latency": None, "hang": 1200.0, "retry_after": 20.0,
                "pattern": list(SLOW_PATTERN), "seed": 7, "rate": 4.0, "burst": 4, "server_error_every": 0,
                "failing": [], "eases_after": None}
MODES = ("healthy", "slow", "limited")
# The calls the service remembers for GET /admin/calls; older ones are dropped.
CALL_LOG = 5000
BEHAVIOURS = {"ok", *SLOW_PATTERN}


class State:
    """The service's mode and counters, shared by its handler threads."""

    def __init__(self, time_scale: float):
        self.time_scale = time_scale
        self.lock = threading.Lock()
        self.mode = dict(DEFAULT_MODE)
        self.cycle = itertools.cycle(SLOW_PATTERN)
        self.requests = 0
        self.open = 0
        self.served: dict[str, int] = {}
        self.tokens = 0.0
        self.refilled = time.monotonic()
        self.refused = 0
        self.first_refusal: float | None = None   # wall time of the limited mode's first refusal
        self.spell_began = 0.0                     # the same moment, monotonic
        self.calls: list[dict] = []

    def set_mode(self, spec: dict) -> dict:
        unknown = set(spec) - set(DEFAULT_MODE)
        if unknown or spec.get("mode", "healthy") not in MODES:
            raise ValueError(f"unknown mode settings: {sorted(unknown) or spec.get('mode')}")
        if not set(spec.get("pattern", SLOW_PATTERN)) <= BEHAVIOURS:
            raise ValueError(f"a pattern names only {sorted(BEHAVIOURS)}")
        with self.lock:
            self.mode = {**DEFAULT_MODE, **spec}
            self.cycle = itertools.cycle(self.mode["pattern"])
            self.tokens, self.refilled, self.refused = float(self.mode["burst"]), time.monotonic(), 0
            self.first_refusal = None
            return dict(self.mode)

    def next_behaviour(self, prompt: str = "") -> tuple[str, dict]:
        """Count a request and log it; return what to do with it and the mode it arrived in."""
        with self.lock:
            self.requests += 1
            mode = dict(self.mode)
            if any(marker in prompt for marker in mode["failing"]):
                behaviour = "server_error"
            elif mode["mode"] == "slow":
                behaviour = next(self.cycle)
            elif mode["mode"] == "limited":
                behaviour = self._limited(prompt, mode)
            else:
                behaviour = "ok"
            self.served[behaviour] = self.served.get(behaviour, 0) + 1
            self.calls.append({"wall": time.time(), "behaviour": behaviour, "prompt": prompt[:300],
                               "retry_after": mode["retry_after"] if behaviour == "rate_limit" else None})
            del self.calls[:-CALL_LOG]
            return behaviour, mode

    def _limited(self, prompt: str, mode: dict) -> str:
        """The token bucket, in production seconds: `rate` tokens a second, never more than `burst`.

        With `eases_after`, the spell ends that many production seconds after
        its first refusal: the provider lets every call through again, as
        slowly. Counted from the refusal, not from the mode switch, so that
        the calls a busy machine sends late still meet the whole spell.
        """
        now = time.monotonic()
        if self.eased(now):
            return "ok"
        elapsed = (now - self.refilled) / self.time_scale
        self.tokens, self.refilled = min(float(mode["burst"]), self.tokens + elapsed * mode["rate"]), now
        if self.tokens >= 1:
            self.tokens -= 1
            return "ok"
        if self.first_refusal is None:
            self.first_refusal, self.spell_began = time.time(), now
        self.refused += 1
        every = int(mode["server_error_every"])
        return "server_error" if every and self.refused % every == 0 else "rate_limit"

    def eased(self, now: float) -> bool:
        """Whether the limited mode's spell is over (call with the lock held)."""
        after = self.mode["eases_after"]
        return (after is not None and self.first_refusal is not None
                and (now - self.spell_began) / self.time_scale >= after)

    def holding(self, delta: int) -> None:
        with self.lock:
            self.open += delta

    def call_log(self) -> list[dict]:
        with self.lock:
            return [dict(call) for call in self.calls]

    def stats(self) -> dict:
        with self.lock:
            return {"mode": self.mode["mode"], "requests": self.requests, "open": self.open,
                    "served": dict(self.served), "time_scale": self.time_scale, "first_refusal": self.first_refusal,
                    "eased": self.eased(time.monotonic())}


def completion(model: str, content: str) -> dict:
    """Return a chat.completion object as the OpenAI API sends it."""
    return {"id": f"chatcmpl-{hashlib.sha1(content.encode()).hexdigest()[:20]}", "object": "chat.completion",
            "created": int(time.time()), "model": model, "system_fingerprint": None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}}


def error_body(kind: str, message: str) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class Handler(BaseHTTPRequestHandler):
    """One request; `server.state` holds the mode."""

    protocol_version = "HTTP/1.1"
    # Headers and body leave in separate writes: with Nagle's algorithm on, the body would wait
    # for the client's delayed ACK, 40 ms a call, which the lab clock turns into 8 production seconds.
    disable_nagle_algorithm = True
    server: "Service"

    def log_message(self, format, *args) -> None:  # the service is quiet; its stats tell the story
        pass

    def do_GET(self) -> None:
        if self.path == "/admin/stats":
            self.send_json(200, self.server.state.stats())
        elif self.path == "/admin/calls":
            self.send_json(200, {"calls": self.server.state.call_log()})
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list", "data": [{"id": "kontor-assistant-1", "object": "model",
                                                             "created": 0, "owned_by": "budgetlab"}]})
        else:
            self.send_json(404, error_body("not_found", f"no route {self.path}"))

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        except ValueError:
            self.send_json(400, error_body("invalid_request_error", "the body is not JSON"))
            return
        if self.path == "/admin/mode":
            try:
                self.send_json(200, self.server.state.set_mode(body))
            except (ValueError, TypeError) as exc:
                self.send_json(400, error_body("invalid_request_error", str(exc)))
        elif self.path == "/v1/chat/completions":
            self.chat(body)
        else:
            self.send_json(404, error_body("not_found", f"no route {self.path}"))

    def chat(self, body: dict) -> None:
        messages = body.get("messages") or []
        if not isinstance(messages, list) or not messages:
            self.send_json(400, error_body("invalid_request_error", "messages must be a non-empty list"))
            return
        prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        behaviour, mode = self.server.state.next_behaviour(prompt)
        digest = hashlib.sha1(prompt.encode()).hexdigest()[:8]
        if behaviour == "rate_limit":
            self.send_json(429, error_body("rate_limit_error", "Rate limit reached; try again later."),
                           {"Retry-After": f"{mode['retry_after']:g}"})
        elif behaviour == "server_error":
            self.send_json(503, error_body("server_error", "The service is overloaded."))
        elif behaviour == "hang":
            self.hold(mode["hang"])
            self.send_json(504, error_body("server_error", "upstream timed out"))
        elif behaviour == "slow_body":
            self.send_slow(completion(body.get("model", "?"), f"answer {digest}"), mode["hang"])
        else:
            seconds = mode["latency"]
            if seconds is None:
                seconds = MODEL_CALL.sample(keyed_rng(int(mode["seed"]), f"model:{digest}"))
            if self.hold(seconds):
                self.send_json(200, completion(body.get("model", "?"), f"answer {digest}"))

    def hold(self, production_seconds: float) -> bool:
        """Wait as the provider would; return False as soon as the client has gone away."""
        self.server.state.holding(+1)
        try:
            end = time.monotonic() + production_seconds * self.server.state.time_scale
            while (left := end - time.monotonic()) > 0:
                # Readable while waiting means the client closed (or, rarely, sent more): no polling,
                # so twenty held calls cost the service no CPU.
                readable, _, _ = select.select([self.connection], [], [], left)
                if readable:
                    if self.client_gone():
                        self.close_connection = True
                        return False
                    time.sleep(min(left, 0.05))
            return True
        finally:
            self.server.state.holding(-1)

    def client_gone(self) -> bool:
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def send_json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client left while the answer was on its way
            self.close_connection = True

    def send_slow(self, payload: dict, production_seconds: float) -> None:
        """Send the status and the first bytes at once, the rest of the body only after a stall."""
        data = json.dumps(payload).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:10])
            self.wfile.flush()
            if self.hold(production_seconds):
                self.wfile.write(data[10:])
        except OSError:
            pass
        self.close_connection = True


class Service(ThreadingHTTPServer):
    daemon_threads = True
    # Twenty worker threads may connect at once; the default backlog of 5 would make some wait.
    request_queue_size = 128

    def __init__(self, time_scale: float):
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = State(time_scale)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m budgetlab.harness.modelserver",
                                     description="Serve the model stand-in on a free loopback port.")
    parser.add_argument("--port-file", required=True, type=Path, help="where to write the port once listening")
    parser.add_argument("--time-scale", type=float, default=1.0, help="wall seconds per production second")
    args = parser.parse_args(argv)
    if not 0 < args.time_scale <= 1:
        print(f"error: --time-scale must be above 0 and at most 1, not {args.time_scale}", file=sys.stderr)
        return 2
    service = Service(args.time_scale)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=service.shutdown, daemon=True).start())
    # Written whole and then renamed, so a reader never sees half a port number.
    partial = args.port_file.with_suffix(".partial")
    partial.write_text(str(service.server_address[1]))
    partial.replace(args.port_file)
    # Stopped at the end of every lab 6 and 8 check: a shorter poll ends it sooner after SIGTERM.
    service.serve_forever(poll_interval=0.02)
    service.server_close()
    return 0


class ModelService:
    """A started model service: its URL, its mode switch and its counters; stopped by PID."""

    def __init__(self, folder: Path, time_scale: float, log: Path | None = None):
        self.folder, self.time_scale = Path(folder), time_scale
        self.log = log or self.folder / "modelserver.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0

    def __enter__(self) -> "ModelService":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The root URL: admin paths hang off it."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What an openai client takes as base_url (KONTOR_MODEL_BASE_URL)."""
        return f"{self.url}/v1"

    def start(self, timeout: float = 15.0) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        port_file = self.folder / f"modelserver-{os.getpid()}-{id(self)}.port"
        port_file.unlink(missing_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "budgetlab.harness.modelserver", "--port-file",
                                          str(port_file), "--time-scale", repr(self.time_scale)],
                                         stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while not port_file.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise StackShortage(f"the model service did not start (log: {self.log})")
            time.sleep(0.01)
        self.port = int(port_file.read_text())
        port_file.unlink(missing_ok=True)

    def stop(self) -> None:
        """Stop the service by its PID; SIGKILL if it does not leave within two seconds."""
        if self.proc is not None:
            process.end_child(self.proc, signal.SIGTERM, grace=2)

    def _call(self, path: str, payload: dict | None = None) -> dict:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(self.url + path, data=data, method="GET" if data is None else "POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def set_mode(self, mode: str = "healthy", **settings) -> dict:
        """Switch the service: healthy (latency=None for the production model), slow or limited."""
        return self._call("/admin/mode", {"mode": mode, **settings})

    def stats(self) -> dict:
        return self._call("/admin/stats")

    def calls(self) -> list[dict]:
        """Every call the service has seen (the newest few thousand): its wall arrival, what it got, its prompt."""
        return self._call("/admin/calls")["calls"]


if __name__ == "__main__":
    sys.exit(main())
