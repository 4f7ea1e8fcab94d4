"""A scripted HTTP receiver on loopback that records what the remote-write client sends."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        scheme = "http"
        if tls is not None:
            # A failed handshake surfaces in accept() as an OSError, which the server ignores.
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/api/v1/write"


def _serve(recv: Receiver) -> Iterator[Receiver]:
    thread = threading.Thread(target=recv.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield recv
    finally:
        recv.server.shutdown()
        recv.server.server_close()
        thread.join(timeout=5)


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
