"""A loopback stand-in for Thanos Query in front of several real Prometheus servers.

Each upstream is one cluster's Prometheus and its external labels, which Prometheus
keeps out of its own TSDB. An instant query goes to every upstream and the vectors come
back merged, every series with its upstream's external labels set (they win over a
series' own, as Thanos's do). That is the query over the merged data whenever the query
keeps clusters apart, as every query of the shipped packs does (each aggregation and
join carries ``cluster``); matchers on external labels are not emulated. Any upstream's
failure fails the query (``partial_response=false``). Remote writes and every other
path go to the first upstream. Tests use it to put two clusters behind one endpoint.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from guardian_common.stop_on_exit import StopOnExit

logger = logging.getLogger(__name__)

_QUERY_PATHS = ("/api/v1/query",)
_FORWARDED_HEADERS = ("content-type", "content-encoding", "x-prometheus-remote-write-version")


@dataclass(frozen=True)
class Store:
    """One upstream Prometheus and the external labels Thanos would add to its series."""

    url: str
    external_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ThanosQuery(StopOnExit):
    stores: Sequence[Store]
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("thanos stand-in not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                logger.debug("thanos stand-in: %s", format % args)

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
        parsed = urllib.parse.urlsplit(handler.path)
        if parsed.path not in _QUERY_PATHS:
            headers = {k: v for k, v in handler.headers.items() if k.lower() in _FORWARDED_HEADERS}
            status, data = _call(self.stores[0].url + handler.path, handler.command, body, headers)
            _reply(handler, status, data)
            return
        params = urllib.parse.parse_qsl(parsed.query) + urllib.parse.parse_qsl(body.decode())
        form = urllib.parse.urlencode(params).encode()
        answers = []
        for store in self.stores:
            status, data = _call(
                store.url + parsed.path,
                "POST",
                form,
                {"Content-Type": "application/x-www-form-urlencoded"},
            )
            if status != 200:
                _reply(handler, status, data)
                return
            answers.append((store, json.loads(data)))
        _reply(handler, 200, json.dumps(_merge(answers)).encode())


def _merge(answers: list[tuple[Store, dict[str, Any]]]) -> dict[str, Any]:
    first = answers[0][1]
    data = first.get("data") or {}
    if data.get("resultType") not in ("vector", "matrix"):
        return first  # a scalar or string is the same from every store
    result = [
        {**series, "metric": {**series.get("metric", {}), **store.external_labels}}
        for store, answer in answers
        for series in (answer.get("data") or {}).get("result", [])
    ]
    merged: dict[str, Any] = {"status": "success", "data": {**data, "result": result}}
    warnings = [w for _, answer in answers for w in answer.get("warnings", [])]
    if warnings:
        merged["warnings"] = warnings
    return merged


def _call(url: str, method: str, body: bytes, headers: Mapping[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(  # noqa: S310 - loopback upstreams
        url, data=body or None, method=method, headers=dict(headers)
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def _reply(handler: BaseHTTPRequestHandler, status: int, data: bytes) -> None:
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up
