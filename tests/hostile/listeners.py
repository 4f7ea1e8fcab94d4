"""Every socket the two programs serve, built as their entry points build them, on
loopback: the exporter's /metrics (``--max-requests 10``), the controller's API
(``web:`` defaults) and the Slack HTTP intake (its Request URL). Each comes with one
legitimate request, its probe (if it has one) and a gate that holds the legitimate
requests inside their handler while it is shut (a flood that keeps every thread busy).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast

import pytest

from exporter.app.collection import SnapshotStore
from exporter.app.metrics import RenderedSnapshot
from exporter.app.server import ExporterApp, HttpServer, connection_limit
from exporter.model.snapshot import ExporterHealth, empty_snapshot
from guardian.adapters.slack import http_intake
from guardian.adapters.slack.http_intake import InteractivityServer
from guardian.app.http_api import EngineHTTPServer, web_guard
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.web import WebSettings
from guardian_common.http_server import ServerLimits
from guardian_common.redact import Secret
from testbed.slackapi.interactions import post_signed

SIGNING_SECRET = "hostile-listeners-signing-secret"  # noqa: S105 - the test's own
SLACK_PATH = "/slack/interactivity"
TIMEOUT = 5.0  # a client's patience: far below the listeners' deadline in these tests
MAX_REQUESTS = 10  # the exporter's default --max-requests


class Gate:
    """Holds whoever passes while it is shut; counts them."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.opened.set()
        self.waiting = 0
        self._lock = threading.Lock()

    def shut(self) -> None:
        self.opened.clear()

    def open(self) -> None:
        self.opened.set()

    def through(self) -> None:
        with self._lock:
            self.waiting += 1
        self.opened.wait(30)
        with self._lock:
            self.waiting -= 1


@dataclass
class Listener:
    name: str
    port: int
    cap: int  # connections open at once
    request: Callable[[], int]  # one legitimate request: its status
    probe: Callable[[], int] | None
    gate: Gate
    taken: list[Any] = dataclasses.field(default_factory=list)  # what the intake took


def get(port: int, path: str) -> int:
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def click(n: int = 0) -> dict[str, Any]:
    """A ``block_actions`` payload, as Slack sends one."""
    return {
        "type": "block_actions",
        "user": {"id": "U0ALICE"},
        "container": {"type": "message", "message_ts": "1.000001", "channel_id": "C0ALERTS"},
        "actions": [{"action_id": "keep_4h", "value": "e1", "action_ts": f"{2 + n}.000001"}],
    }


def post_click(port: int, n: int = 0) -> int:
    url = f"http://127.0.0.1:{port}{SLACK_PATH}"
    status, _ = post_signed(url, click(n), SIGNING_SECRET, timestamp=time.time(), timeout=TIMEOUT)
    return status


@contextlib.contextmanager
def exporter(timeout: float) -> Iterator[Listener]:
    store = SnapshotStore()
    health = ExporterHealth(
        nvml_up=True, last_success_timestamp_seconds=None, stage_seconds=(), errors=()
    )
    store.publish(RenderedSnapshot(empty_snapshot("n", health, 1.0)))
    gate = Gate()
    rendered = store.current
    assert rendered is not None
    body = rendered.body

    def held(accept: str | None, gzipped: bool = False) -> tuple[bytes, str]:
        gate.through()
        return body(accept, gzipped)

    rendered.body = held  # type: ignore[method-assign]
    cap = connection_limit(MAX_REQUESTS)  # as exporter/app/serve.py builds it
    limits = ServerLimits(max_connections=cap, request_timeout=timeout)
    server = HttpServer(
        ExporterApp(store, max_requests=MAX_REQUESTS), "127.0.0.1", 0, limits=limits
    )
    server.start()
    port = server.port
    try:
        yield Listener(
            "exporter",
            port,
            cap,
            lambda: get(port, "/metrics"),
            lambda: get(port, "/healthz"),
            gate,
        )
    finally:
        gate.open()
        server.stop()


class _HeldEngine:
    """What the API asks of the rule engine; ``/api/v1/alerts`` passes the gate."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def active_alerts(self) -> list[Any]:
        self._gate.through()
        return []

    def ready(self) -> bool:
        return True


@contextlib.contextmanager
def controller(timeout: float) -> Iterator[Listener]:
    gate = Gate()
    web = WebSettings(request_timeout=timeout)
    engine = cast("RuleEngine", _HeldEngine(gate))
    server = EngineHTTPServer(engine, "127.0.0.1", 0, web_guard(web))
    server.start()
    port = server.address[1]
    try:
        yield Listener(
            "controller",
            port,
            web.max_connections,
            lambda: get(port, "/api/v1/alerts"),
            lambda: get(port, "/healthz"),
            gate,
        )
    finally:
        gate.open()
        server.stop()


@contextlib.contextmanager
def slack(timeout: float, monkeypatch: pytest.MonkeyPatch) -> Iterator[Listener]:
    gate = Gate()
    taken: list[Any] = []

    def accept(payload: dict[str, Any]) -> bool:  # the worker: records the click
        gate.through()
        taken.append(payload)
        return True

    limits = dataclasses.replace(http_intake.LIMITS, request_timeout=timeout)
    monkeypatch.setattr(http_intake, "LIMITS", limits)
    intake = InteractivityServer(
        "127.0.0.1:0", SLACK_PATH, Secret(SIGNING_SECRET), accept, time.time
    )
    intake.start()
    port = intake.address[1]
    try:
        yield Listener(
            "slack", port, limits.max_connections, lambda: post_click(port), None, gate, taken
        )
    finally:
        gate.open()
        intake.stop()


LISTENERS = ("exporter", "controller", "slack")


@contextlib.contextmanager
def listener(
    name: str, monkeypatch: pytest.MonkeyPatch, timeout: float = 60.0
) -> Iterator[Listener]:
    """``name``'s listener; ``timeout``: its deadline per connection (long by default, so
    a request starved by other connections would time out in the client first)."""
    if name == "slack":
        with slack(timeout, monkeypatch) as found:
            yield found
    else:
        with (exporter if name == "exporter" else controller)(timeout) as found:
            yield found


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)


def closed_by_server(sock: socket.socket, within: float = TIMEOUT) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def answer_status(sock: socket.socket) -> int:
    """The status code of the answer on ``sock`` (0: closed without one)."""
    sock.settimeout(TIMEOUT)
    data = b""
    with contextlib.suppress(OSError):
        while b"\r\n" not in data:
            chunk = sock.recv(256)
            if not chunk:
                break
            data += chunk
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def json_body(payload: dict[str, Any]) -> bytes:
    return urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
