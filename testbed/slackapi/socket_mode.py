"""Socket Mode on the fake: ``apps.connections.open`` hands out a one-time websocket URL;
each connection gets ``hello``, then envelopes; the app acks each ``envelope_id``.

As Slack does, an envelope goes to one open connection; one not acked within
``ack_timeout`` seconds is sent again (``retry_attempt`` + 1, ``retry_reason``
"timeout"), to another connection when there is one, at most ``max_retries`` times.
An envelope with no connection open waits for the next one. ``disconnect(reason)``
sends Slack's ``disconnect`` message (``refresh_requested``, ``warning``,
``link_disabled``) and closes the connections after ``grace`` seconds.
"""

from __future__ import annotations

import itertools
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testbed.slackapi.errors import ApiError
from testbed.slackapi.websocket import CLOSE, TEXT, Closed, WebSocket

logger = logging.getLogger(__name__)

APP_ID = "A0GUARDIAN"


@dataclass
class Delivery:
    """One envelope and what became of it."""

    envelope_id: str
    type: str
    payload: dict[str, Any]
    attempts: int = 0  # how often it was sent
    sent_at: float | None = None
    acked: threading.Event = field(default_factory=threading.Event)
    ack_payload: dict[str, Any] | None = None

    def wait_acked(self, timeout: float) -> bool:
        return self.acked.wait(timeout)


@dataclass
class _Connection:
    ws: WebSocket
    number: int
    opened_at: float


class SocketModeHub:
    def __init__(
        self,
        app_tokens: frozenset[str],
        clock: Callable[[], float],
        *,
        ack_timeout: float = 3.0,
        max_retries: int = 3,
    ) -> None:
        self.app_tokens = app_tokens
        self.clock = clock
        self.ack_timeout = ack_timeout
        self.max_retries = max_retries
        self._tickets: set[str] = set()
        self._connections: list[_Connection] = []
        self._deliveries: list[Delivery] = []
        self._numbers = itertools.count(1)
        self._envelopes = itertools.count(1)
        self._rr = 0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._retrier = threading.Thread(
            target=self._retry_loop, name="fake-slack-socket", daemon=True
        )
        self._retrier.start()
        self.connections_opened = 0

    # -------------------------------------------------------------- Web API side
    def open(self, token: str | None, ws_base: str) -> dict[str, Any]:
        """``apps.connections.open``: needs an app-level token (``xapp-``)."""
        if not token:
            raise ApiError("not_authed")
        if not token.startswith("xapp-"):
            raise ApiError("not_allowed_token_type")
        if token not in self.app_tokens:
            raise ApiError("invalid_auth")
        ticket = secrets.token_hex(8)
        with self._lock:
            self._tickets.add(ticket)
        return {"url": f"{ws_base}/link/?ticket={ticket}&app_id={APP_ID}"}

    def take_ticket(self, ticket: str) -> bool:
        with self._lock:
            if ticket in self._tickets:
                self._tickets.discard(ticket)
                return True
            return False

    # -------------------------------------------------------------- connections
    def serve(self, ws: WebSocket) -> None:
        """Run one accepted connection until it closes (on the request's own thread)."""
        conn = _Connection(ws, next(self._numbers), self.clock())
        with self._lock:
            self._connections.append(conn)
            self.connections_opened += 1
            count = len(self._connections)
        try:
            ws.send_text(
                json.dumps(
                    {
                        "type": "hello",
                        "num_connections": count,
                        "debug_info": {
                            "host": "fake-slack",
                            "build_number": 1,
                            "approximate_connection_time": 18060,
                        },
                        "connection_info": {"app_id": APP_ID},
                    }
                )
            )
            self._flush()
            while True:
                opcode, data = ws.receive()
                if opcode == CLOSE:
                    break
                if opcode == TEXT:
                    self._on_text(data)
        except Closed:
            pass
        finally:
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            ws.close()

    def _on_text(self, data: bytes) -> None:
        try:
            message = json.loads(data.decode())
        except (UnicodeDecodeError, ValueError):
            logger.info("fake slack: socket mode: a frame that is not JSON")
            return
        envelope = message.get("envelope_id") if isinstance(message, dict) else None
        if not envelope:
            return
        with self._lock:
            for d in self._deliveries:
                if d.envelope_id == envelope and not d.acked.is_set():
                    d.ack_payload = message.get("payload")
                    d.acked.set()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._connections)

    def wait_connected(self, count: int = 1, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.open_connections >= count:
                return True
            time.sleep(0.01)
        return False

    def disconnect(self, reason: str = "refresh_requested", grace: float = 1.0) -> None:
        """Tell every connection to go, then close them after ``grace`` seconds."""
        with self._lock:
            conns = list(self._connections)
        body = json.dumps({"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}})
        for conn in conns:
            try:
                conn.ws.send_text(body)
            except Closed:
                continue

        def close_later() -> None:
            time.sleep(grace)
            for conn in conns:
                conn.ws.close()

        threading.Thread(target=close_later, daemon=True).start()

    def drop(self) -> None:
        """Close every connection at once, without a word (a network failure)."""
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            conn.ws.close(1006)

    # -------------------------------------------------------------- envelopes
    def deliver(self, type_: str, payload: dict[str, Any]) -> Delivery:
        """Queue an envelope; it goes out on an open connection now or when one opens."""
        delivery = Delivery(
            f"env-{next(self._envelopes):06d}-{secrets.token_hex(4)}", type_, payload
        )
        with self._lock:
            self._deliveries.append(delivery)
        self._flush()
        return delivery

    @property
    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)

    def _flush(self) -> None:
        now = time.monotonic()
        with self._lock:
            if not self._connections:
                return
            for d in self._deliveries:
                if d.acked.is_set() or d.attempts > self.max_retries:
                    continue
                if d.sent_at is not None and now - d.sent_at < self.ack_timeout:
                    continue
                self._send(d, now)

    def _send(self, d: Delivery, now: float) -> None:
        conn = self._connections[self._rr % len(self._connections)]
        self._rr += 1
        envelope = {
            "envelope_id": d.envelope_id,
            "type": d.type,
            "accepts_response_payload": False,
            "payload": d.payload,
            "retry_attempt": d.attempts,
            "retry_reason": "timeout" if d.attempts else "",
        }
        d.attempts += 1
        d.sent_at = now
        try:
            conn.ws.send_text(json.dumps(envelope))
        except Closed:
            d.sent_at = None  # try again on the next connection

    def _retry_loop(self) -> None:
        while not self._stop.wait(0.1):
            try:
                self._flush()
            except Exception:  # the loop edge of a test double
                logger.exception("fake slack: socket mode retry pass failed")

    def close(self) -> None:
        self._stop.set()
        self.drop()
