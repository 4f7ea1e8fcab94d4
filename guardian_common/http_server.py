"""The threaded HTTP server both programs serve from, with the limits an exposed
endpoint needs (socketserver has none of them):

- a listen backlog sized for many scrapers connecting at once (socketserver's is 5,
  and a full backlog drops SYNs, which clients retry only after 1, 3, 7 ... seconds);
- at most ``max_connections`` connections handled at once, each in its own thread;
  further ones wait in the backlog until one finishes, as Prometheus's own
  ``--web.max-connections`` does;
- one deadline per connection, ``request_timeout`` from accept to the last byte sent:
  the socket timeout alone would let a client that trickles a byte every few seconds
  hold a thread forever, so a watchdog shuts the socket down at the deadline;
- optional TLS (1.2 or later), the handshake in the connection's thread, the
  certificate reloaded when its files change (a renewed Secret needs no restart).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import HTTPServer
from pathlib import Path
from socketserver import BaseRequestHandler
from typing import Any

from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerLimits:
    max_connections: int = 64
    """Connections handled at once; more wait in the backlog."""
    request_timeout: float = 10.0
    """Seconds one connection may take from accept to its last byte."""
    backlog: int = 1024
    """Connections the kernel queues before accepting (capped by net.core.somaxconn)."""


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
                except (OSError, ssl.SSLError) as exc:
                    logger.warning("TLS: keeping the last certificate: %s", exc)
            return self._context

    def _load(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(str(self._files[0]), str(self._files[1]))
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


class LimitedHTTPServer(HTTPServer):
    """An HTTPServer with the limits above; a WSGI server mixes it in before WSGIServer."""

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
        self.request_queue_size = limits.backlog
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(limits.max_connections)
        self._closing = threading.Event()
        self._deadlines = Deadlines()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # At the cap, stop taking connections off the backlog until one finishes.
        while not self._slots.acquire(timeout=0.2):
            if self._closing.is_set():
                self.shutdown_request(request)
                return
        thread = threading.Thread(
            target=self._serve, args=(request, client_address), name="http-conn", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # no thread can be started now: drop this one connection
            self._slots.release()
            self.shutdown_request(request)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        timeout = self.limits.request_timeout
        key, watch = self._deadlines.watch(request, timeout)
        conn: socket.socket = request
        try:
            request.settimeout(timeout)
            if self.tls is not None:
                conn = self.tls.context().wrap_socket(request, server_side=True)
                watch.sock = conn
            self.finish_request(conn, client_address)
        except Exception:
            self.handle_error(conn, client_address)
        finally:
            self._deadlines.forget(key)
            self.shutdown_request(conn)
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Resets, timeouts, failed handshakes: the client's business, not an operator's.
        logger.debug("request from %s failed", client_address, exc_info=True)  # noqa: LOG014

    def shutdown(self) -> None:
        self._closing.set()
        super().shutdown()

    def server_close(self) -> None:
        super().server_close()
        self._deadlines.close()
