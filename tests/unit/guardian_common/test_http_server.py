"""The limited server, over real loopback sockets: half-open and trickling clients are cut
at the deadline, connections are capped, the backlog queues a crowd, TLS certificates
are reloaded when they change, and stopping works while the accept loop waits."""

from __future__ import annotations

import contextlib
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


def closed_by_server(sock: socket.socket) -> bool:
    sock.settimeout(15)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


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


def test_connections_are_capped_and_the_rest_wait_in_the_backlog(serve: Any) -> None:
    gate = Gate()
    port = serve(ServerLimits(max_connections=3, request_timeout=30), gate)
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
    gate.open.set()
    for thread in threads:
        thread.join(20)
    assert results == [200] * 10
    assert gate.most == 3


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
