"""A small RFC 6455 server side on the stdlib: the handshake and text, ping/pong and
close frames, enough for slack_sdk's Socket Mode clients.

Client frames arrive masked (RFC 6455 5.3); server frames go out unmasked.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

TEXT = 0x1
BINARY = 0x2
CLOSE = 0x8
PING = 0x9
PONG = 0xA


class Closed(Exception):
    """The peer closed the connection, or it broke."""


def accept_key(key: str) -> str:
    """``Sec-WebSocket-Accept`` for the client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()  # noqa: S324


def encode_frame(opcode: int, payload: bytes) -> bytes:
    head = bytes([0x80 | opcode])
    n = len(payload)
    if n < 126:
        head += bytes([n])
    elif n < 1 << 16:
        head += bytes([126]) + struct.pack("!H", n)
    else:
        head += bytes([127]) + struct.pack("!Q", n)
    return head + payload


class WebSocket:
    """One accepted connection (after the 101 answer)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()
        self.closed = False

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            try:
                chunk = self.sock.recv(n - len(data))
            except TimeoutError:
                if self.closed:
                    raise Closed("closed") from None
                continue
            except OSError as exc:
                raise Closed(str(exc)) from None
            if not chunk:
                raise Closed("connection closed by the peer")
            data += chunk
        return data

    def receive(self) -> tuple[int, bytes]:
        """The next whole message (fragments joined); pings are answered here."""
        parts: list[bytes] = []
        first_opcode = 0
        while True:
            b0, b1 = self._read(2)
            fin, opcode = b0 & 0x80, b0 & 0x0F
            length = b1 & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self._read(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if b1 & 0x80 else b""
            payload = self._read(length)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == PING:
                self.send(PONG, payload)
                continue
            if opcode >= CLOSE:  # close, or an unsolicited pong
                if opcode == CLOSE:
                    return CLOSE, payload
                continue
            if opcode != 0:
                first_opcode = opcode
            parts.append(payload)
            if fin:
                return first_opcode, b"".join(parts)

    def send(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            try:
                self.sock.sendall(encode_frame(opcode, payload))
            except OSError as exc:
                raise Closed(str(exc)) from None

    def send_text(self, text: str) -> None:
        self.send(TEXT, text.encode())

    def close(self, code: int = 1000) -> None:
        if self.closed:
            return
        with contextlib.suppress(Closed):
            self.send(CLOSE, struct.pack("!H", code))
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
