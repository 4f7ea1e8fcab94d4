"""The threaded HTTP server both programs serve from (the exporter's /metrics, the
controller's API, Slack's Request URL), with the limits an exposed endpoint needs
(socketserver has none of them):

- every connection is read, without a thread, until its request is complete (headers,
  and the body its ``Content-Length`` announces; :mod:`guardian_common.http_connections`),
  so idle and trickling clients hold a socket, never a thread or a request slot; a
  malformed request is answered 4xx there;
- at most ``max_connections`` connections open at once: one more closes the oldest
  one still sending its request (of the client holding the most), and no client keeps
  more than ``idle_per_peer`` such connections over a second old; while every thread is
  busy a few new ones are kept over the cap, so a probe still gets in;
- complete requests are answered by at most ``max_requests`` threads at once; the rest
  wait without one, and at the connection cap the one waiting longest is answered 503;
- ``/healthz`` and ``/readyz`` are answered by threads of their own, so no flood of
  scrapes or requests delays a kubelet probe;
- one deadline per connection, ``request_timeout`` from accept to the last byte sent:
  while the request is read the listener closes it, while it is answered a watchdog
  shuts the socket down (a client that reads a byte every few seconds holds a thread
  no longer);
- a listen backlog of at least ``max_connections`` (socketserver's is 5, and a full
  backlog drops SYNs, which clients retry only after 1, 3, 7 ... seconds);
- optional TLS (1.2 or later), the handshake in the listener without blocking, the
  certificate reloaded when its files change (a renewed Secret needs no restart).

One request per connection (HTTP/1.0 answers, as before): a client reconnects for the
next one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import HTTPServer
from pathlib import Path
from socketserver import BaseRequestHandler, StreamRequestHandler
from typing import Any, cast

from guardian_common.errors import ConfigError
from guardian_common.files import CERTIFICATE, FileReadError, pinned_path
from guardian_common.http_connections import (
    BUSY,
    MAX_HEAD,
    Conn,
    Deadlines,
    Head,
    Lane,
    Reading,
    Refusal,
    close,
    examine,
    receive,
    refuse,
)

logger = logging.getLogger(__name__)

PROBE_PATHS = frozenset({"/healthz", "/readyz"})
_STALE = 1.0  # seconds: a connection still sending its request after this may be closed
_ACCEPTS = 64  # connections accepted per turn of the listener, between reads
_RESERVE = 16  # new connections kept over the cap while every thread is busy (probes)
_LISTENER, _WAKE = "listener", "wake"


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int = 64
    """Connections open at once: sending their request, waiting for a thread, or being
    answered. One more closes the oldest connection still sending its request (a
    second old, of the client holding the most), else answers the request that has
    waited longest 503, else (beyond a reserve of 16 for probes) closes the oldest one
    still sending."""
    request_timeout: float = 10.0
    """Seconds one connection may take from accept to its last byte."""
    backlog: int = 1024
    """Connections the kernel queues before accepting (at least ``max_connections``;
    capped by net.core.somaxconn)."""
    max_requests: int = 0
    """Complete requests answered at once, a thread each (0: ``max_connections``); more
    wait for a thread without holding one."""
    idle_per_peer: int = 16
    """Connections one client (an IPv6 client: its /64) may hold open while still sending
    its request; each one more closes its oldest such connection over a second old."""
    probe_paths: frozenset[str] = PROBE_PATHS
    """Answered by threads of their own, so no flood of other requests delays them."""
    probe_slots: int = 2
    """Threads for ``probe_paths``."""
    max_body: int = 64 * 1024
    """Bytes of request body (``Content-Length``); more is answered 413."""
    max_buffered: int = 16 << 20
    """Bytes of requests still being read, all connections together; beyond it the
    connection holding the most is closed (memory stays bounded, whatever the crowd)."""


class ServerTls:
    """A server-side TLS context from a certificate and key file, reloaded when they change.

    A file that cannot be loaded at start is a ConfigError naming ``field``; a bad file
    later keeps the last good certificate (and says so once)."""

    def __init__(self, cert_file: str | Path, key_file: str | Path, *, field: str) -> None:
        self._files = (Path(cert_file), Path(key_file))
        self._field = field
        self._lock = threading.Lock()
        self._stamp = self._stamp_now()
        try:
            self._context = self._load()
        except FileReadError as exc:
            raise ConfigError(
                exc.reason, path=str(exc.path or self._files[0]), field=field
            ) from None
        except (OSError, ssl.SSLError) as exc:
            reason = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or exc
            raise ConfigError(
                f"cannot load the TLS certificate and key: {reason}",
                path=str(self._files[0]),
                field=field,
            ) from None

    def context(self) -> ssl.SSLContext:
        with self._lock:
            stamp = self._stamp_now()
            if stamp != self._stamp:
                self._stamp = stamp
                try:
                    self._context = self._load()
                    logger.info("TLS: reloaded the certificate %s", self._files[0])
                except (OSError, ssl.SSLError, FileReadError) as exc:
                    logger.warning("TLS: keeping the last certificate: %s", exc)
            return self._context

    def _load(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # Through the bounded reader: a FIFO or a device swapped in is refused, never read.
        with (
            pinned_path(self._files[0], CERTIFICATE) as cert,
            pinned_path(self._files[1], CERTIFICATE) as key,
        ):
            context.load_cert_chain(cert, key)
        return context

    def _stamp_now(self) -> tuple[int, ...]:
        out: list[int] = []
        for path in self._files:
            try:
                stat = path.stat()
                out += [stat.st_mtime_ns, stat.st_size]
            except OSError:
                out += [-1, -1]
        return tuple(out)


class _Prefetched(StreamRequestHandler):
    """Mixed into every handler: it reads the request the listener has read already."""

    def setup(self) -> None:
        super().setup()
        self.rfile.close()
        self.rfile = io.BytesIO(cast("LimitedHTTPServer", self.server).prefetched())


class LimitedHTTPServer(HTTPServer):
    """An HTTPServer with the limits above; a WSGI server mixes it in before WSGIServer.
    ``serve_forever`` is the listener: it accepts, reads and hands complete requests to
    the handler class on threads of their own."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseRequestHandler],
        *,
        limits: ServerLimits,
        tls: ServerTls | None = None,
    ) -> None:
        self.limits = limits
        self.tls = tls
        self.request_queue_size = max(limits.backlog, limits.max_connections)
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._closing = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        self._deadlines = Deadlines()
        self._local = threading.local()
        self._reading = Reading()
        self._busy = 0  # connections with a complete request: waiting or being answered
        self._lock = threading.Lock()
        self._limit = MAX_HEAD + 4 + limits.max_body
        workers = limits.max_requests or limits.max_connections
        self._requests = Lane("http-request", workers, self._answer)
        self._probes = Lane("http-probe", limits.probe_slots, self._answer)
        self._paused_until = 0.0
        mixed = type(handler.__name__, (_Prefetched, handler), {"__doc__": handler.__doc__})
        super().__init__(address, cast("type[BaseRequestHandler]", mixed))
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def prefetched(self) -> bytes:
        """The request the current thread answers, as the listener read it."""
        return cast("bytes", getattr(self._local, "request", b""))

    # -------------------------------------------------------------- the listener
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        self._stopped.clear()
        try:
            with selectors.DefaultSelector() as selector:
                self.socket.setblocking(False)
                selector.register(self.socket, selectors.EVENT_READ, _LISTENER)
                selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
                while not self._closing.is_set():
                    self._turn(selector, poll_interval)
        finally:
            for conn in self._reading:
                self._reading.remove(conn)
                close(conn.sock)
            self._stopped.set()

    def _turn(self, selector: selectors.BaseSelector, poll_interval: float) -> None:
        now = time.monotonic()
        if self._paused_until and now >= self._paused_until:
            self._paused_until = 0.0
            selector.register(self.socket, selectors.EVENT_READ, _LISTENER)
        upcoming = self._reading.next_deadline()
        wait = poll_interval if upcoming is None else min(poll_interval, upcoming - now)
        for key, _ in selector.select(max(0.0, wait)):
            if key.data is _LISTENER:
                self._accept(selector)
            elif key.data is _WAKE:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(4096)
            else:
                self._read(selector, key.data)
        for conn in self._reading.expired(time.monotonic()):
            self._drop(selector, conn)

    def _accept(self, selector: selectors.BaseSelector) -> None:
        for _ in range(_ACCEPTS):
            try:
                sock, address = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:  # out of file descriptors: let some close first
                logger.warning("http: cannot accept connections for now: %s", exc)
                selector.unregister(self.socket)
                self._paused_until = time.monotonic() + 0.1
                return
            now = time.monotonic()
            sock.setblocking(False)
            try:
                if self.tls is not None:
                    context = self.tls.context()
                    sock = context.wrap_socket(
                        sock, server_side=True, do_handshake_on_connect=False
                    )
            except (OSError, ValueError):
                close(sock)
                continue
            conn = Conn(sock, address, now)
            conn.deadline = now + self.limits.request_timeout
            self._reading.add(conn)
            selector.register(sock, selectors.EVENT_READ, conn)
            self._enforce(selector, conn, now)

    def _enforce(self, selector: selectors.BaseSelector, new: Conn, now: float) -> None:
        """The per-client and the overall connection limits, after ``new`` came in."""
        mine = self._reading.of_peer(new.peer)
        for conn in mine[: max(0, len(mine) - self.limits.idle_per_peer)]:
            if now - conn.accepted >= _STALE:
                self._drop(selector, conn)
        while len(self._reading) + self._busy > self.limits.max_connections:
            oldest = self._reading.oldest_of_busiest()
            if oldest is not None and now - oldest.accepted >= _STALE:
                self._drop(selector, oldest)
            elif (waiting := self._requests.shed()) is not None:
                self._finished()
                refuse(waiting.sock, BUSY)
            elif oldest is not None and len(self._reading) > _RESERVE:
                self._drop(selector, oldest)
            else:
                return  # a few new ones over the cap: one may be a probe

    def _read(self, selector: selectors.BaseSelector, conn: Conn) -> None:
        if conn not in self._reading:  # closed earlier in this turn
            return
        before = len(conn.buffer)
        alive = receive(conn, self._limit)
        self._reading.buffered += len(conn.buffer) - before
        if not alive:
            self._drop(selector, conn)
            return
        while self._reading.buffered > self.limits.max_buffered:
            largest = self._reading.largest()
            if largest is None:
                break
            self._drop(selector, largest)
            if largest is conn:
                return
        found = examine(conn.buffer, self.limits.max_body)
        if found is None:
            return
        selector.unregister(conn.sock)
        self._reading.remove(conn)
        if isinstance(found, Refusal):
            refuse(conn.sock, found)
        else:
            self._dispatch(conn, found)

    def _dispatch(self, conn: Conn, head: Head) -> None:
        with self._lock:
            self._busy += 1
        lane = self._probes if head.path in self.limits.probe_paths else self._requests
        if not lane.submit(conn):  # no thread can be started now
            self._finished()
            refuse(conn.sock, BUSY)

    def _drop(self, selector: selectors.BaseSelector, conn: Conn) -> None:
        selector.unregister(conn.sock)
        self._reading.remove(conn)
        close(conn.sock)

    def _finished(self) -> None:
        with self._lock:
            self._busy -= 1

    # -------------------------------------------------------------- a request's thread
    def _answer(self, conn: Conn) -> None:
        remaining = conn.deadline - time.monotonic()
        key = None
        try:
            if remaining > 0:
                key, _ = self._deadlines.watch(conn.sock, remaining)
                conn.sock.settimeout(remaining)
                self._local.request = bytes(conn.buffer)
                self.finish_request(conn.sock, conn.address)
        except Exception:
            self.handle_error(conn.sock, conn.address)
        finally:
            self._local.request = b""
            if key is not None:
                self._deadlines.forget(key)
            self.shutdown_request(conn.sock)
            self._finished()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Resets, timeouts, failed handshakes: the client's business, not an operator's.
        logger.debug("request from %s failed", client_address, exc_info=True)  # noqa: LOG014

    def shutdown(self) -> None:
        self._closing.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._stopped.wait()

    def server_close(self) -> None:
        super().server_close()
        self._deadlines.close()
        self._wake_r.close()
        self._wake_w.close()


class ServerThread:
    """Serves ``_server`` from a daemon thread named ``thread_name`` between start and stop."""

    _server: LimitedHTTPServer
    _thread: threading.Thread | None = None
    thread_name = "http"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=self.thread_name, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
