"""The shared part of our loopback HTTP stand-ins in front of real servers: a threaded
server on a free port, the upstream call and the JSON reply. Subclasses say what a
request does (:meth:`LoopbackProxy._handle`)."""

from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from guardian_common.stop_on_exit import StopOnExit

logger = logging.getLogger(__name__)


class LoopbackProxy(StopOnExit):
    """Started with :meth:`start` or as a context manager; stopped with :meth:`stop`."""

    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                logger.debug("%s: %s", type(proxy).__name__, format % args)

            def do_GET(self) -> None:
                proxy._handle(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._handle(self, self.rfile.read(length))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        raise NotImplementedError


def call(url: str, method: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
    """The upstream's status and body, error statuses included."""
    request = urllib.request.Request(  # noqa: S310 - loopback upstreams
        url, data=body or None, method=method, headers=dict(headers)
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def reply(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up (its timeout, which may be the point of a delay)
