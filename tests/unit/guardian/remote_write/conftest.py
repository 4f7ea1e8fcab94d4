"""A scripted HTTP receiver on loopback that records what the remote-write client sends."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

import pytest

from tests.plugins.loopback_http import loopback_server, serve_in_thread
from tests.plugins.pki_fixture import Pki


@dataclass
class Answer:
    status: int = 204
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    delay: float = 0.0


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class Receiver:
    """Answers each POST with the next scripted :class:`Answer` (204 once they run out)."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.answers: list[Answer] = []
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.requests.append(Received(self.path, dict(self.headers), body))
                    answer = receiver.answers.pop(0) if receiver.answers else Answer()
                time.sleep(answer.delay)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server, base = loopback_server(Handler, tls)
        self.url = f"{base}/api/v1/write"


def _serve(recv: Receiver) -> Iterator[Receiver]:
    stop = serve_in_thread(recv.server)
    try:
        yield recv
    finally:
        stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from _serve(Receiver())


@pytest.fixture
def tls_receiver(pki: Pki) -> Iterator[Receiver]:
    """A receiver on https that requires a client certificate signed by the test CA."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.load_verify_locations(pki.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    yield from _serve(Receiver(context))
