"""The limited server, over real loopback sockets: half-open and trickling clients are cut
at the deadline and hold no request slot, connections are capped (per client too),
requests beyond the threads wait without one, probes have threads of their own,
malformed requests get 4xx, the backlog queues a crowd, TLS certificates are reloaded
when they change, and stopping works while requests wait."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from guardian_common.errors import ConfigError
from guardian_common.http_server import LimitedHTTPServer, ServerLimits, ServerTls


class Gate:
    """Counts handlers running at once; they wait until the gate opens."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.running = 0
        self.most = 0
        self.lock = threading.Lock()

    def enter(self) -> None:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.open.wait(20)
        with self.lock:
            self.running -= 1


def handler_class(gate: Gate | None = None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if gate is not None and self.path == "/slow":
                gate.enter()
            body = b"ok\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[LimitedHTTPServer] = []

    def start(limits: ServerLimits, gate: Gate | None = None, tls: ServerTls | None = None) -> int:
        server = LimitedHTTPServer(("127.0.0.1", 0), handler_class(gate), limits=limits, tls=tls)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def get(port: int, path: str = "/", context: ssl.SSLContext | None = None) -> int:
    scheme = "https" if context else "http"
    url = f"{scheme}://127.0.0.1:{port}{path}"
    with urllib.request.urlopen(url, timeout=15, context=context) as response:  # noqa: S310
        return int(response.status)


def closed_by_server(sock: socket.socket, wait: float = 15) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_open_and_trickling_clients_are_cut_at_the_deadline(serve: Any) -> None:
    port = serve(ServerLimits(max_connections=8, request_timeout=0.3))
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(40)]
    trickling = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
    stop = threading.Event()

    def trickle() -> None:  # a byte every 0.1 s: the socket timeout alone never fires
        request = b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 1000
        for byte in request:
            if stop.is_set():
                return
            for sock in trickling:
                with contextlib.suppress(OSError):  # cut by the server: the point
                    sock.send(bytes([byte]))
            time.sleep(0.1)

    feeder = threading.Thread(target=trickle)
    feeder.start()
    try:
        assert get(port) == 200  # served once the held connections have been cut
        assert all(closed_by_server(sock) for sock in silent + trickling)
    finally:
        stop.set()
        feeder.join()
        for sock in silent + trickling:
            sock.close()


def test_requests_beyond_max_requests_wait_without_a_thread(serve: Any) -> None:
    gate = Gate()
    port = serve(ServerLimits(max_connections=20, max_requests=3, request_timeout=30), gate)
    results: list[int] = []
    threads = [
        threading.Thread(target=lambda: results.append(get(port, "/slow"))) for _ in range(10)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while gate.running < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time for a fourth to sneak in, if the cap leaked
    assert gate.running == 3
    assert get(port, "/healthz") == 200  # probes have threads of their own
    gate.open.set()
    for thread in threads:
        thread.join(20)
    assert results == [200] * 10
    assert gate.most == 3


def test_at_the_connection_cap_the_longest_waiting_request_is_answered_503(serve: Any) -> None:
    gate = Gate()
    port = serve(ServerLimits(max_connections=3, max_requests=1, request_timeout=30), gate)
    holder = threading.Thread(target=get, args=(port, "/slow"))
    holder.start()
    while gate.running < 1:
        time.sleep(0.01)
    waiting: list[socket.socket] = []
    try:
        for _ in range(3):  # the third is one over the cap
            waiting.append(socket.create_connection(("127.0.0.1", port)))
            waiting[-1].sendall(b"GET / HTTP/1.0\r\n\r\n")
            time.sleep(0.1)  # read and waiting, in this order
        sock = waiting[0]
        sock.settimeout(10)
        assert sock.recv(100).startswith(b"HTTP/1.0 503 ")  # the oldest one is shed
    finally:
        gate.open.set()
        holder.join(20)
        for sock in waiting:
            sock.close()


def test_idle_connections_hold_no_request_slot(serve: Any) -> None:
    port = serve(ServerLimits(max_connections=200, max_requests=1, request_timeout=30))
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(100)]
    try:
        for sock in idle[::2]:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        started = time.monotonic()
        assert [get(port) for _ in range(5)] == [200] * 5
        assert time.monotonic() - started < 5
    finally:
        for sock in idle:
            sock.close()


def test_a_client_keeps_few_idle_connections(serve: Any) -> None:
    port = serve(ServerLimits(idle_per_peer=4, request_timeout=30))
    old = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
    time.sleep(1.2)  # a second old: closable
    new = socket.create_connection(("127.0.0.1", port))
    try:
        assert [closed_by_server(sock) for sock in old[:7]] == [True] * 7
        for sock in [*old[7:], new]:
            sock.settimeout(0.3)
            with pytest.raises(TimeoutError):  # still open
                sock.recv(1)
    finally:
        for sock in [*old, new]:
            sock.close()


def test_bytes_held_for_unfinished_requests_are_bounded(serve: Any) -> None:
    port = serve(ServerLimits(max_buffered=100_000, request_timeout=30))
    head = b"POST / HTTP/1.1\r\nContent-Length: 60000\r\n\r\n"
    big = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        for sock in big:
            sock.sendall(head + b"a" * 45_000)  # the body never finishes
        time.sleep(0.3)
        closed = [closed_by_server(sock, wait=0.1) for sock in big]
        assert closed.count(True) == 1  # the budget holds two of them, not three
        assert get(port) == 200
    finally:
        for sock in big:
            sock.close()


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\nContent-Length: 70000\r\n\r\n", 413),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\n" + b"X-Big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    ],
    ids=[
        "cl-abc",
        "cl-twice",
        "cl-negative",
        "cl-digits",
        "body-large",
        "chunked",
        "request-line",
        "header-line",
        "head-large",
    ],
)
def test_a_malformed_request_is_answered_4xx(serve: Any, request_bytes: bytes, status: int) -> None:
    port = serve(ServerLimits())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        with contextlib.suppress(OSError):  # the answer may come before all was sent
            sock.sendall(request_bytes)
        answer = sock.recv(200)
    assert answer.startswith(f"HTTP/1.0 {status} ".encode()), answer


def test_the_backlog_queues_a_crowd_while_every_slot_is_busy(serve: Any) -> None:
    gate = Gate()
    port = serve(ServerLimits(max_connections=1, request_timeout=30, backlog=256), gate)
    holder = threading.Thread(target=get, args=(port, "/slow"))
    holder.start()
    while gate.running < 1:
        time.sleep(0.01)
    crowd = []
    try:
        for _ in range(150):  # socketserver's backlog of 5 would drop SYNs from the 7th on
            crowd.append(socket.create_connection(("127.0.0.1", port), timeout=0.9))  # noqa: PERF401
    finally:
        gate.open.set()
        holder.join(20)
        for sock in crowd:
            sock.close()
    assert len(crowd) == 150


def test_stopping_while_the_accept_loop_waits_for_a_slot() -> None:
    gate = Gate()
    server = LimitedHTTPServer(
        ("127.0.0.1", 0), handler_class(gate), limits=ServerLimits(max_connections=1)
    )
    loop = threading.Thread(target=server.serve_forever, daemon=True)
    loop.start()
    port = int(server.server_address[1])
    holder = threading.Thread(target=lambda: get(port, "/slow"), daemon=True)
    holder.start()
    while gate.running < 1:
        time.sleep(0.01)
    waiting = socket.create_connection(("127.0.0.1", port))  # blocks the accept loop
    time.sleep(0.3)
    server.shutdown()  # returns although no slot frees up
    server.server_close()
    loop.join(5)
    assert not loop.is_alive()
    gate.open.set()
    waiting.close()


def _certificate(directory: Path, name: str) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed, so no test certificate can be made")
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    argv = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-subj", f"/CN={name}", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([*argv, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls_certificate_is_reloaded_when_its_files_change(serve: Any, tmp_path: Path) -> None:
    first = _certificate(tmp_path, "first")
    second = _certificate(tmp_path, "second")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(first[0], cert)
    shutil.copy(first[1], key)
    port = serve(ServerLimits(), tls=ServerTls(cert, key, field="tls_cert_file"))
    assert get(port, context=ssl.create_default_context(cafile=str(first[0]))) == 200
    shutil.copy(second[0], cert)
    shutil.copy(second[1], key)
    assert get(port, context=ssl.create_default_context(cafile=str(second[0]))) == 200
    key.write_text("not a key\n")  # a broken renewal keeps the last good certificate
    assert get(port, context=ssl.create_default_context(cafile=str(second[0]))) == 200


def test_an_unusable_certificate_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("nope\n")
    with pytest.raises(ConfigError, match=r"bad\.pem: web\.tls_cert_file: cannot load"):
        ServerTls(bad, bad, field="web.tls_cert_file")


def test_a_certificate_swapped_for_a_fifo_keeps_the_last_one(serve: Any, tmp_path: Path) -> None:
    # The bounded reader: a FIFO is refused, never opened blocking (it would hang the
    # connection's handshake for good), and the last good certificate stays.
    first = _certificate(tmp_path, "first")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    shutil.copy(first[0], cert)
    shutil.copy(first[1], key)
    port = serve(ServerLimits(), tls=ServerTls(cert, key, field="tls_cert_file"))
    cert.unlink()
    os.mkfifo(cert)
    assert get(port, context=ssl.create_default_context(cafile=str(first[0]))) == 200
    with pytest.raises(ConfigError, match="not a regular file"):
        ServerTls(cert, key, field="web.tls_cert_file")
