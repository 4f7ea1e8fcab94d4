"""The HTTP server: /metrics, /healthz, /readyz. Optional TLS and basic auth.

/metrics serves the current snapshot's pre-rendered bytes, so a scrape never waits on NVML.
At most ``max_requests`` requests run at once, each counted from the moment its request
has arrived whole to its last byte written (checking its password included, so neither a
crowd of scrapers nor a flood of bad passwords can make more work than that); more get
503 with ``Retry-After`` at once. A connection still sending its request (or sending
nothing) takes no slot: the listener reads it without a thread. Failed logins are
limited per client (429, see :mod:`guardian_common.http_auth`). The health endpoints need
no credentials (kubelet probes send none), take no slot, are answered on threads of
their own and never touch NVML. Connections, idle and trickling clients, deadlines, the
listen backlog and TLS: :mod:`guardian_common.http_server`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from exporter.app.collection import SnapshotStore
from guardian_common.http_auth import Authenticator
from guardian_common.http_server import (
    PROBE_PATHS,
    LimitedHTTPServer,
    ServerLimits,
    ServerThread,
    ServerTls,
)

logger = logging.getLogger(__name__)

StartResponse = Callable[..., Any]
Headers = list[tuple[str, str]]
REQUEST_TIMEOUT_S = 10.0  # Prometheus's default scrape timeout
# Connections open at once, and requests answered at once (a thread each): beyond
# --max-requests a scrape is answered 503 at once (and a probe 200) instead of waiting;
# beyond this the oldest connection still sending its request is closed.
# 256: a few hundred scrapers at once, within the pod's memory limit.
MAX_CONNECTIONS = 256


def connection_limit(max_requests: int) -> int:
    return max(MAX_CONNECTIONS, max_requests + 32)


_NO_AUTH = Authenticator()
ADMITTED = "guardian_exporter.admitted"  # environ key: the server took a request slot


class _Released:
    """A response body that frees its request slot once the server has written it (or
    given up): WSGI servers call ``close()`` on the iterable either way."""

    def __init__(self, chunks: Iterable[bytes], release: Callable[[], None]) -> None:
        self._chunks = chunks
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._chunks)

    def close(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()


class ExporterApp:
    """The WSGI application."""

    def __init__(
        self,
        store: SnapshotStore,
        *,
        max_requests: int,
        auth: Authenticator = _NO_AUTH,
        healthy: Callable[[], bool] = lambda: True,
    ) -> None:
        self._store = store
        self._slots = threading.BoundedSemaphore(max_requests)
        self._auth = auth
        self._healthy = healthy

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
        admitted = environ.get(ADMITTED)
        if admitted is None:  # not through our server: the slot is this call's
            release = self.admit()
            if release is None:
                return _too_many(start_response)
            try:
                body = self._authorized(path, environ, start_response)
            except BaseException:
                release()
                raise
            return _Released(body, release)
        if not admitted:
            return _too_many(start_response)
        return self._authorized(path, environ, start_response)

    def admit(self) -> Callable[[], None] | None:
        """A request slot: its release function, or None when all are taken."""
        return self._slots.release if self._slots.acquire(blocking=False) else None

    def _authorized(
        self, path: str, environ: dict[str, Any], start_response: StartResponse
    ) -> Iterable[bytes]:
        verdict = self._auth.check(
            environ.get("HTTP_AUTHORIZATION"), environ.get("REMOTE_ADDR", "")
        )
        if verdict.retry_after is not None:
            retry = [("Retry-After", str(verdict.retry_after))]
            return _text(start_response, "429 Too Many Requests", "too many failed logins\n", retry)
        if not verdict.allowed:
            challenges = [("WWW-Authenticate", c) for c in self._auth.challenges]
            return _text(start_response, "401 Unauthorized", "unauthorized\n", challenges)
        if path == "/metrics":
            return self._metrics(environ, start_response)
        if path == "/":
            return _text(start_response, "200 OK", "GPU Guardian exporter: see /metrics\n")
        return _text(start_response, "404 Not Found", "not found\n")

    def _metrics(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
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


def _too_many(start_response: StartResponse) -> list[bytes]:
    retry = [("Retry-After", "1")]
    return _text(start_response, "503 Service Unavailable", "too many concurrent requests\n", retry)


def _text(
    start_response: StartResponse, status: str, body: str, extra: Headers | None = None
) -> list[bytes]:
    data = body.encode()
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))]
    start_response(status, headers + (extra or []))
    return [data]


class _Handler(WSGIRequestHandler):
    """Takes the app's request slot once the request has been parsed (the listener read
    it whole before this thread started), for every path but the probes."""

    _release: Callable[[], None] | None = None

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        app = self.server.get_app()  # type: ignore[attr-defined]
        probe = self.path.partition("?")[0] in PROBE_PATHS
        if isinstance(app, ExporterApp) and not probe:
            self._release = app.admit()
        return True

    def handle(self) -> None:
        try:
            super().handle()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ[ADMITTED] = self._release is not None
        return environ

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)


class _Server(LimitedHTTPServer, WSGIServer):
    """The limits of LimitedHTTPServer, the environ of WSGIServer."""


class HttpServer(ServerThread):
    thread_name = "guardian-exporter-http"

    def __init__(
        self,
        app: ExporterApp,
        host: str,
        port: int,
        *,
        tls: ServerTls | None = None,
        limits: ServerLimits | None = None,
    ) -> None:
        limits = limits or ServerLimits(request_timeout=REQUEST_TIMEOUT_S)
        self._server = _Server((host, port), _Handler, limits=limits, tls=tls)
        self._server.set_app(app)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])
