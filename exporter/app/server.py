"""The HTTP server: /metrics, /healthz, /readyz. Optional TLS and basic auth.

/metrics serves the current snapshot's pre-rendered bytes, so a scrape never waits on NVML.
At most ``max_requests`` scrapes run at once; more get 503. The health endpoints need no
credentials (kubelet probes send none) and never touch NVML.
"""

from __future__ import annotations

import base64
import binascii
import logging
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from exporter.adapters.users import check_password
from exporter.app.collection import SnapshotStore

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
REQUEST_TIMEOUT_S = 10.0


class ExporterApp:
    """The WSGI application."""

    def __init__(
        self,
        store: SnapshotStore,
        *,
        max_requests: int,
        users: dict[str, bytes] | None = None,
        healthy: Callable[[], bool] = lambda: True,
    ) -> None:
        self._store = store
        self._slots = threading.BoundedSemaphore(max_requests)
        self._users = users
        self._healthy = healthy
        self._auth_cache: dict[str, bool] = {}  # bcrypt is slow on purpose; remember outcomes

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":
            ok = self._healthy()
            return _text(
                start_response,
                "200 OK" if ok else "503 Service Unavailable",
                "ok\n" if ok else "collector stopped\n",
            )
        if path == "/readyz":
            ready = self._store.ready.is_set()
            return _text(
                start_response,
                "200 OK" if ready else "503 Service Unavailable",
                "ready\n" if ready else "no snapshot yet\n",
            )
        if not self._authorized(environ.get("HTTP_AUTHORIZATION")):
            start_response(
                "401 Unauthorized",
                [
                    ("Content-Type", "text/plain"),
                    ("WWW-Authenticate", 'Basic realm="guardian-exporter"'),
                ],
            )
            return [b"unauthorized\n"]
        if path == "/metrics":
            return self._metrics(environ, start_response)
        if path == "/":
            return _text(start_response, "200 OK", "GPU Guardian exporter: see /metrics\n")
        return _text(start_response, "404 Not Found", "not found\n")

    def _metrics(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if not self._slots.acquire(blocking=False):
            return _text(start_response, "503 Service Unavailable", "too many concurrent scrapes\n")
        try:
            rendered = self._store.current
            if rendered is None:
                return _text(start_response, "503 Service Unavailable", "no snapshot yet\n")
            gzipped = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
            body, content_type = rendered.body(environ.get("HTTP_ACCEPT"), gzipped)
            headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
            if gzipped:
                headers.append(("Content-Encoding", "gzip"))
            start_response("200 OK", headers)
            return [body]
        finally:
            self._slots.release()

    def _authorized(self, header: str | None) -> bool:
        if self._users is None:
            return True
        if not header or not header.startswith("Basic "):
            return False
        cached = self._auth_cache.get(header)
        if cached is not None:
            return cached
        try:
            user, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return False
        hashed = self._users.get(user)
        ok = hashed is not None and check_password(hashed, password)
        if len(self._auth_cache) > 1024:
            self._auth_cache.clear()
        self._auth_cache[header] = ok
        return ok


def _text(start_response: StartResponse, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(
        status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    )
    return [data]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    ssl_context: ssl.SSLContext | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(REQUEST_TIMEOUT_S)  # a slow client cannot hold a thread forever
        if self.ssl_context is None:
            super().finish_request(request, client_address)
            return
        # The TLS handshake runs here, in the request's thread, not in the accept loop.
        with self.ssl_context.wrap_socket(request, server_side=True) as tls:
            super().finish_request(tls, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        logger.debug("request from %s failed", client_address, exc_info=True)  # noqa: LOG014


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


class HttpServer:
    def __init__(
        self,
        app: ExporterApp,
        host: str,
        port: int,
        *,
        certfile: str | None = None,
        keyfile: str | None = None,
    ) -> None:
        server_class = _ThreadingServer6 if ":" in host else _ThreadingServer
        self._server: _ThreadingServer = make_server(
            host, port, app, server_class=server_class, handler_class=_QuietHandler
        )
        if certfile is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(certfile, keyfile)
            self._server.ssl_context = context
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="guardian-exporter-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
