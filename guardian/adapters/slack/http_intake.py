"""Clicks over HTTP: Slack POSTs each interaction to our Request URL.

Its own listener (never the metrics port). Every request must carry Slack's v0
signature over ``v0:<timestamp>:<body>`` with the app's signing secret, and a
timestamp within 5 minutes of our clock (slack_sdk's ``SignatureVerifier``); anything
else is answered 401 and changes nothing. A good click is answered 200 once ``accept``
has recorded it, well within Slack's 3 seconds; the action runs afterwards.
"""

from __future__ import annotations

import json
import logging
import socketserver
import threading
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from slack_sdk.signature import Clock, SignatureVerifier

from guardian_common.redact import Secret

logger = logging.getLogger(__name__)

Accept = Callable[[dict[str, Any]], bool]
MAX_BODY = 1 << 20  # Slack's payloads are far smaller


class _Clock(Clock):
    """The verifier's clock interface over an injected clock."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    def now(self) -> float:
        return self._clock()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], intake: InteractivityServer) -> None:
        self.intake = intake
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # no reverse DNS lookup
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10

    def do_POST(self) -> None:
        status = self.server.intake.handle(self.path, dict(self.headers.items()), self._body())
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if 0 <= length <= MAX_BODY else None

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
        self.rejected = 0

    def start(self) -> None:
        server = _Server(self._bind, self)
        self._server = server
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
            return 200 if self._accept(payload) else 503
        except Exception:  # per request: the user can press again
            logger.exception("slack: could not take a click")
            return 500
