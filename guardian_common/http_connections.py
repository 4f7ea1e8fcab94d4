"""The connections of http_server.py's listener: requests read before any thread is
given to them, the connections still sending theirs (oldest first, by client), the
threads that answer complete ones, and the deadline watchdog of those threads.

Every accepted connection is read here, without blocking, by the one thread that also
accepts: its TLS handshake, its request line and headers and, when ``Content-Length``
announces one, its body. Only a complete request goes on to a thread, so a client that
connects and sends nothing, or trickles a byte at a time, holds a socket and a few bytes
of buffer, never a thread or a request slot. A request that can never be served (a
malformed request line or ``Content-Length``, a chunked body, headers or a body over the
limits) is answered 4xx here and closed.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from guardian_common.http_auth import client_key

MAX_HEAD = 64 * 1024  # request line and headers, as http.server allows one line
MAX_HEADERS = 100  # as http.client
_CHUNK = 64 * 1024
_DIGITS = 18  # a Content-Length longer than this is over any limit


@dataclass(frozen=True)
class Head:
    """A complete request: the path it asks for and its size (head and body)."""

    path: str
    size: int


@dataclass(frozen=True)
class Refusal:
    """A request answered here, without a thread."""

    status: int
    reason: str
    retry_after: int | None = None

    def response(self) -> bytes:
        body = f"{self.reason}\n".encode()
        lines = [
            f"HTTP/1.0 {self.status} {HTTPStatus(self.status).phrase}",
            "Content-Type: text/plain; charset=utf-8",
            f"Content-Length: {len(body)}",
            "Connection: close",
        ]
        if self.retry_after is not None:
            lines.append(f"Retry-After: {self.retry_after}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


BUSY = Refusal(503, "too many concurrent requests", retry_after=1)


def _head_end(data: bytes | bytearray) -> tuple[int, int]:
    """Where the headers end and how long the blank line is; (-1, 0) when not yet."""
    found = [(i, n) for i, n in ((data.find(b"\r\n\r\n"), 4), (data.find(b"\n\n"), 2)) if i >= 0]
    return min(found) if found else (-1, 0)


def examine(data: bytes | bytearray, max_body: int) -> Head | Refusal | None:
    """The request in ``data`` once it is complete, a Refusal for one that can never be
    served, None while more is to come."""
    end, blank = _head_end(data)
    if end < 0 or end > MAX_HEAD:
        return Refusal(431, "request headers too large") if len(data) > MAX_HEAD else None
    lines = bytes(data[:end]).split(b"\n")
    parts = lines[0].split()
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return Refusal(400, "malformed request line")
    if len(lines) - 1 > MAX_HEADERS:
        return Refusal(431, "too many headers")
    length: int | None = None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            return Refusal(400, "malformed header")
        key, value = name.strip().lower(), value.strip()
        if key == b"transfer-encoding":
            return Refusal(411, "a body needs Content-Length")
        if key == b"content-length":
            if not value.isdigit():
                return Refusal(400, "bad Content-Length")
            if len(value) > _DIGITS:
                return Refusal(413, "request body too large")
            if length is not None and int(value) != length:
                return Refusal(400, "bad Content-Length")
            length = int(value)
    body = length or 0
    if body > max_body:
        return Refusal(413, "request body too large")
    size = end + blank + body
    if len(data) < size:
        return None
    return Head(parts[1].decode("latin-1").partition("?")[0], size)


class Conn:
    """One accepted connection, from accept to close."""

    __slots__ = ("accepted", "address", "buffer", "deadline", "peer", "secured", "sock")

    def __init__(self, sock: socket.socket, address: Any, now: float) -> None:
        self.sock = sock
        self.address = address
        self.peer = client_key(str(address[0]))
        self.accepted = now
        self.deadline = now
        self.buffer = bytearray()
        self.secured = not isinstance(sock, ssl.SSLSocket)


def receive(conn: Conn, limit: int) -> bool:
    """Read what has arrived, up to ``limit`` bytes in all (the TLS handshake first);
    False: the client closed, reset or failed its handshake. Needs a non-blocking socket."""
    sock = conn.sock
    try:
        if not conn.secured:
            assert isinstance(sock, ssl.SSLSocket)  # noqa: S101 - only TLS starts unsecured
            sock.do_handshake()
            conn.secured = True
        while len(conn.buffer) < limit:
            data = sock.recv(min(_CHUNK, limit - len(conn.buffer)))
            if not data:
                return False
            conn.buffer += data
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        return True  # nothing more for now
    except OSError:  # ssl.SSLError included: a failed handshake is the client's business
        return False
    return True


def refuse(sock: socket.socket, refusal: Refusal) -> None:
    """Answer ``refusal`` as far as the socket takes it at once, then close."""
    with contextlib.suppress(OSError):
        sock.setblocking(False)
        sock.send(refusal.response())
    close(sock)


def close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class Reading:
    """The connections still sending their request: oldest first, and by client."""

    def __init__(self) -> None:
        self._all: dict[int, Conn] = {}
        self._peers: dict[str, dict[int, Conn]] = {}
        self.buffered = 0  # bytes read and held, all of them together

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self) -> Iterator[Conn]:
        return iter(list(self._all.values()))

    def __contains__(self, conn: object) -> bool:
        return id(conn) in self._all and self._all[id(conn)] is conn

    def add(self, conn: Conn) -> None:
        self._all[id(conn)] = conn
        self._peers.setdefault(conn.peer, {})[id(conn)] = conn

    def remove(self, conn: Conn) -> None:
        if self._all.pop(id(conn), None) is not None:
            self.buffered -= len(conn.buffer)
        mine = self._peers.get(conn.peer)
        if mine is not None:
            mine.pop(id(conn), None)
            if not mine:
                del self._peers[conn.peer]

    def of_peer(self, peer: str) -> list[Conn]:
        return list(self._peers.get(peer, {}).values())

    def largest(self) -> Conn | None:
        """The connection holding the most bytes."""
        return max(self._all.values(), key=lambda c: len(c.buffer), default=None)

    def oldest_of_busiest(self) -> Conn | None:
        """The oldest connection of the client holding the most (a flood's own)."""
        if not self._peers:
            return None
        busiest = max(self._peers.values(), key=len)
        return next(iter(busiest.values()))

    def expired(self, now: float) -> list[Conn]:
        out = []
        for conn in self._all.values():  # accepted in order, all with the same timeout
            if conn.deadline > now:
                break
            out.append(conn)
        return out

    def next_deadline(self) -> float | None:
        return next((c.deadline for c in self._all.values()), None)


class Lane:
    """Complete requests answered at once, a thread each; the rest wait here, in order,
    holding no thread."""

    def __init__(self, name: str, limit: int, answer: Callable[[Conn], None]) -> None:
        self._name = name
        self._limit = max(1, limit)
        self._answer = answer
        self._running = 0
        self._waiting: deque[Conn] = deque()
        self._lock = threading.Lock()

    def submit(self, conn: Conn) -> bool:
        """Answer ``conn`` now or once a thread is free; False: no thread can be started."""
        with self._lock:
            if self._running >= self._limit:
                self._waiting.append(conn)
                return True
            self._running += 1
        thread = threading.Thread(target=self._run, args=(conn,), name=self._name, daemon=True)
        try:
            thread.start()
        except RuntimeError:
            with self._lock:
                self._running -= 1
            return False
        return True

    def shed(self) -> Conn | None:
        """The request that has waited longest, taken off the queue (to be answered 503)."""
        with self._lock:
            return self._waiting.popleft() if self._waiting else None

    def _run(self, conn: Conn | None) -> None:
        while conn is not None:
            self._answer(conn)
            with self._lock:
                conn = self._waiting.popleft() if self._waiting else None
                if conn is None:
                    self._running -= 1


class _Watch:
    __slots__ = ("deadline", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline


class Deadlines:
    """Shuts a watched socket down when its deadline passes; one thread for all."""

    def __init__(self, monotonic: Any = time.monotonic) -> None:
        self._monotonic = monotonic
        self._watches: dict[int, _Watch] = {}
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, sock: socket.socket, seconds: float) -> tuple[int, _Watch]:
        watch = _Watch(sock, self._monotonic() + seconds)
        with self._cond:
            key = next(self._ids)
            self._watches[key] = watch
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="http-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return key, watch

    def forget(self, key: int) -> None:
        with self._cond:
            self._watches.pop(key, None)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = self._monotonic()
                for key in [k for k, w in self._watches.items() if w.deadline <= now]:
                    _shut(self._watches.pop(key).sock)
                upcoming = min((w.deadline for w in self._watches.values()), default=None)
                self._cond.wait(None if upcoming is None else max(0.01, upcoming - now))


def _shut(sock: socket.socket) -> None:
    # The plain socket's shutdown, also under TLS: it wakes the connection's thread, which
    # closes the socket; OSError: that thread has closed it already.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
