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
from http.server import BaseHTTPRequestHandler

from testbed.loopback_proxy import LoopbackProxy, call, reply

logger = logging.getLogger(__name__)


@dataclass
class ProxyBehaviour:
    """What the proxy does to the next requests. Change it between evaluations."""

    status: int | None = None  # answer this status with a Prometheus error body
    error_type: str = "timeout"
    warnings: tuple[str, ...] = ()  # inject into a forwarded 200 answer
    delay_seconds: float = 0.0  # sleep before answering


@dataclass
class QueryProxy(LoopbackProxy):
    upstream: str
    behaviour: ProxyBehaviour = field(default_factory=ProxyBehaviour)
    requests: list[dict[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

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
            reply(handler, behaviour.status, json.dumps(payload).encode())
            return
        status, data = self._forward(handler, body)
        if status == 200 and behaviour.warnings and parsed.path.startswith("/api/v1/query"):
            decoded = json.loads(data)
            decoded["warnings"] = list(behaviour.warnings)
            data = json.dumps(decoded).encode()
        reply(handler, status, data)

    def _forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> tuple[int, bytes]:
        # Identity encoding: the body may be rewritten (warnings) and is sent back as is.
        headers = {
            k: v for k, v in handler.headers.items() if k.lower() not in ("host", "accept-encoding")
        }
        return call(self.upstream.rstrip("/") + handler.path, handler.command, body, headers)
