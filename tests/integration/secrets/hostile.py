"""A hostile HTTP endpoint for the secrets test: it answers every request in the way its
``mode`` says, and echoes the whole request (request line with the query, headers with
``Authorization``, body) back in its error body, as a careless proxy or a debug endpoint
might. A client that puts a server's text into its messages must scrub it."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from typing import Any

STATUS = {401: "Unauthorized", 403: "Forbidden", 400: "Bad Request", 404: "Not Found",
          422: "Unprocessable Entity", 429: "Too Many Requests",
          500: "Internal Server Error", 503: "Service Unavailable"}  # fmt: skip
MODES = (*(str(code) for code in STATUS), "garbage", "reset", "hang")


class HostileServer:
    def __init__(self, mode: str = "401") -> None:
        self.mode = mode
        # Request-line prefixes answered 200 with a body whatever the mode: lets a program
        # get past a start-up check into the paths that meet the hostile answers.
        self.friendly: dict[str, dict[str, Any]] = {}
        self._sock = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._sock.settimeout(0.2)
        self.port = int(self._sock.getsockname()[1])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, path: str = "", userinfo: str = "") -> str:
        at = f"{userinfo}@" if userinfo else ""
        return f"http://{at}127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                request = _read_request(conn)
            except OSError:
                return
            line = request.split(b"\r\n", 1)[0].decode("latin-1")
            for prefix, answer in self.friendly.items():
                if line.startswith(prefix):
                    _send(conn, 200, "OK", json.dumps(answer).encode(), "application/json")
                    return
            mode = self.mode
            if mode == "reset":  # an RST instead of an answer
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            if mode == "hang":
                self._stop.wait(30)
                return
            echo = request.decode("latin-1")
            if mode == "garbage":
                _send(conn, 200, "OK", echo.encode("latin-1"), "text/plain")
                return
            code = int(mode)
            body: dict[str, Any] = {
                "status": "error", "errorType": "bad_data", "error": echo,  # Prometheus
                "kind": "Status", "reason": STATUS[code], "message": echo,  # Kubernetes
                "ok": False,  # Slack (its "error" is the echo too)
            }  # fmt: skip
            _send(conn, code, STATUS[code], json.dumps(body).encode(), "application/json")


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def _send(conn: socket.socket, code: int, reason: str, body: bytes, ctype: str) -> None:
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: {ctype}\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 0\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):  # the client gave up: its business
        conn.sendall(head.encode() + body)
