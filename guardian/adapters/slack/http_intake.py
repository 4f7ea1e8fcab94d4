"""Clicks over HTTP: Slack POSTs each interaction to our Request URL.

Its own listener (never the metrics port), with the limits of every listener of ours
(:mod:`guardian_common.http_server`: requests read whole before a thread takes them,
idle and trickling clients cut, connections capped, malformed requests answered 4xx).
Every request must carry Slack's v0 signature over ``v0:<timestamp>:<body>`` with the
app's signing secret, and a timestamp within 5 minutes of our clock (slack_sdk's
``SignatureVerifier``); anything else is answered 401 and changes nothing. A good click
is queued and answered 200 at once, before any other work, well within Slack's 3
seconds even in a burst; a worker hands it to ``accept`` (which records it), and the
action runs after that. A click queued when the replica dies is lost: the user sees
nothing happen and presses again.
"""

from __future__ import annotations

import json
import logging
import queue
import socketserver
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from slack_sdk.signature import Clock, SignatureVerifier

from guardian_common.http_server import LimitedHTTPServer, ServerLimits
from guardian_common.redact import Secret

logger = logging.getLogger(__name__)

Accept = Callable[[dict[str, Any]], bool]
MAX_BODY = 256 * 1024  # Slack's payloads, the whole message included, are far smaller
MAX_QUEUED = 1024  # clicks acknowledged but not yet taken; beyond it 503 (Slack retries)
LIMITS = ServerLimits(
    max_connections=512,  # a burst of clicks from many users at once
    request_timeout=10.0,
    max_requests=32,  # each only checks a signature and queues
    probe_paths=frozenset(),
    max_body=MAX_BODY,
)


class _Clock(Clock):
    """The verifier's clock interface over an injected clock."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock()


class _Server(LimitedHTTPServer):
    def __init__(self, address: tuple[str, int], intake: InteractivityServer) -> None:
        self.intake = intake
        super().__init__(address, _Handler, limits=LIMITS)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no reverse DNS lookup
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        status = self.server.intake.handle(self.path, dict(self.headers.items()), self._body())
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _body(self) -> bytes | None:
        # The listener has read the whole body, its Content-Length checked (4xx otherwise).
        length = self.headers.get("Content-Length") or "0"
        if not length.isdigit() or int(length) > MAX_BODY:
            return None
        return self.rfile.read(int(length))

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("slack interactivity: " + format, *args)  # noqa: G003


class InteractivityServer:
    def __init__(
        self,
        address: str,
        path: str,
        signing_secret: Secret,
        accept: Accept,
        clock: Callable[[], float],
    ) -> None:
        host, _, port = address.rpartition(":")
        self._bind = (host or "0.0.0.0", int(port))  # noqa: S104 - the configured address
        self.path = path
        self._verifier = SignatureVerifier(signing_secret.reveal(), clock=_Clock(clock))
        self._accept = accept
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(MAX_QUEUED)
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self.rejected = 0

    def start(self) -> None:
        server = _Server(self._bind, self)
        self._server = server
        self._stop.clear()
        self._worker = threading.Thread(target=self._work, name="slack-intake", daemon=True)
        self._worker.start()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True
        )
        self._thread.start()
        logger.info("slack: interactivity listening on %s:%s%s", *self.address, self.path)

    @property
    def address(self) -> tuple[str, int]:
        if self._server is None:
            return self._bind
        return self._server.server_name, self._server.server_port

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}{self.path}"

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._stop.set()  # the worker takes what was acknowledged, then ends
        if self._worker is not None:
            self._worker.join(5)
            self._worker = None

    def _work(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                payload = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                if not self._accept(payload):
                    logger.warning("slack: a click was acknowledged but not taken")
            except Exception:  # per click: the user sees nothing happen and presses again
                logger.exception("slack: could not take a click")

    def handle(self, path: str, headers: dict[str, str], body: bytes | None) -> int:
        if urllib.parse.urlsplit(path).path != self.path:
            return 404
        if body is None:
            return 413
        if not self._verifier.is_valid_request(body, headers):
            self.rejected += 1
            logger.warning("slack: interactivity request refused: bad signature or timestamp")
            return 401
        form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
        try:
            payload = json.loads(form.get("payload", [""])[0])
        except ValueError:
            return 400
        if not isinstance(payload, dict) or payload.get("type") != "block_actions":
            return 200  # nothing we act on
        try:
            self._queue.put_nowait(payload)
        except queue.Full:
            logger.warning("slack: %s clicks waiting; asking Slack to send one again", MAX_QUEUED)
            return 503
        return 200
