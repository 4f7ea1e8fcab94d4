"""A loopback HTTP proxy in front of a real Prometheus that can misbehave on demand.

Tests and the demo use it to show the engine's outage handling against the real
client library: answer 503 (query timeout), 422, add ``warnings`` to a real answer (as
Thanos does for a partial response), or stall past the client's timeout. By default it
forwards every request unchanged and records each query's parameters.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

from guardian_common.stop_on_exit import StopOnExit

logger = logging.getLogger(__name__)


@dataclass
class ProxyBehaviour:
    """What the proxy does to the next requests. Change it between evaluations."""

    status: int | None = None  # answer this status with a Prometheus error body
    error_type: str = "timeout"
    warnings: tuple[str, ...] = ()  # inject into a forwarded 200 answer
    delay_seconds: float = 0.0  # sleep before answering


@dataclass
class QueryProxy(StopOnExit):
    upstream: str
    behaviour: ProxyBehaviour = field(default_factory=ProxyBehaviour)
    requests: list[dict[str, str]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("proxy not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                logger.debug("proxy: %s", format % args)

            def do_GET(self) -> None:
                proxy._handle(self, b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                proxy._handle(self, self.rfile.read(length))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        params = dict(urllib.parse.parse_qsl(parsed.query))
        if body:
            params.update(urllib.parse.parse_qsl(body.decode()))
        with self._lock:
            record = {"path": parsed.path, **params}
            if handler.headers.get("Authorization"):
                record["authorization"] = handler.headers["Authorization"]
            self.requests.append(record)
            behaviour = ProxyBehaviour(**vars(self.behaviour))
        if behaviour.delay_seconds:
            time.sleep(behaviour.delay_seconds)
        if behaviour.status is not None:
            payload = {
                "status": "error",
                "errorType": behaviour.error_type,
                "error": f"injected by the query proxy ({behaviour.status})",
            }
            self._reply(handler, behaviour.status, json.dumps(payload).encode())
            return
        status, data = self._forward(handler, body)
        if status == 200 and behaviour.warnings and parsed.path.startswith("/api/v1/query"):
            decoded = json.loads(data)
            decoded["warnings"] = list(behaviour.warnings)
            data = json.dumps(decoded).encode()
        self._reply(handler, status, data)

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, bytes]:
        request = urllib.request.Request(  # noqa: S310 - loopback upstream
            self.upstream.rstrip("/") + handler.path,
            data=body or None,
            method=handler.command,
            # Identity encoding: the body may be rewritten (warnings) and is sent back as is.
            headers={
                k: v
                for k, v in handler.headers.items()
                if k.lower() not in ("host", "accept-encoding")
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), bytes(exc.read())

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout), which is the point of a delay
