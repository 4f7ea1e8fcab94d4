"""Test HTTP servers on a free loopback port, served from a thread (https with a TLS
context), for the clients' wire tests."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def loopback_server(
    handler: type[BaseHTTPRequestHandler], tls: ssl.SSLContext | None = None
) -> tuple[ThreadingHTTPServer, str]:
    """The server (not yet serving) and its base URL, ``http(s)://127.0.0.1:<port>``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    scheme = "http"
    if tls is not None:
        # A failed handshake surfaces in accept() as an OSError, which the server ignores.
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    return server, f"{scheme}://127.0.0.1:{server.server_address[1]}"


def serve_in_thread(server: ThreadingHTTPServer) -> Callable[[], None]:
    """Start serving; the function returned stops the server and closes its socket."""
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop
