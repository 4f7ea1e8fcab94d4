"""The HTTP layer: a threading HTTP/1.1 server that speaks the Kubernetes REST protocol."""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import sys
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from testbed.kubeapi import errors, openapi
from testbed.kubeapi.api_rules import MAX_REQUEST_BODY_BYTES
from testbed.kubeapi.faults import Recorder, RequestRecord
from testbed.kubeapi.handlers import Request, handle, verb_of
from testbed.kubeapi.resources import (
    VERSION_INFO,
    ResourceRegistry,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
)
from testbed.kubeapi.schema import FIELD_VALIDATION
from testbed.kubeapi.store import Store
from testbed.kubeapi.tables import table, wants_table
from testbed.kubeapi.urls import Discovery, ResourceRoute, parse_path
from testbed.kubeapi.watch import plan_watch, stream_watch

logger = logging.getLogger(__name__)

_JSON = "application/json"
_WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


class KubeHTTPServer(ThreadingHTTPServer):
    """Holds the shared state; tracks open connections so that stop can close them."""

    daemon_threads = False
    block_on_close = True  # server_close joins every handler thread

    def __init__(
        self,
        address: tuple[str, int],
        *,
        store: Store,
        registry: ResourceRegistry,
        recorder: Recorder,
        token: str | None,
        bookmark_interval_s: float,
    ) -> None:
        super().__init__(address, KubeRequestHandler)
        self.store = store
        self.registry = registry
        self.recorder = recorder
        self.token = token
        self.bookmark_interval_s = bookmark_interval_s
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):  # already closed by the peer
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up mid-response is normal for a test server.
        logger.debug(
            "connection from %s ended with an error: %r", client_address, sys.exc_info()[1]
        )

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        return f"{host!s}:{port}"


class KubeRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes on a kept-alive connection: with Nagle's
    # algorithm the body waits for the client's delayed ACK, 40 ms on every request.
    disable_nagle_algorithm = True
    server: KubeHTTPServer
    _started = False  # the response (a watch stream) has begun

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), format % args)

    # ------------------------------------------------------------ dispatch

    def _dispatch(self) -> None:
        self._started = False
        split = urlsplit(self.path)
        path, query = split.path, dict(parse_qsl(split.query, keep_blank_values=True))
        content_type = self.headers.get("Content-Type")
        raw = self._read_body()
        verb = self.command.lower()
        body: Any = None
        manager: str | None = None
        # kubectl sends Strict: unknown fields of a custom resource are then a 400.
        FIELD_VALIDATION.set(query.get("fieldValidation") or "Warn")
        try:
            self._authorize()
            if raw is None:
                raise errors.ApiError(
                    413,
                    f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}",
                    reason="RequestEntityTooLarge",
                )
            body = _decode(raw, content_type)
            route = parse_path(self.server.registry, path)
            if isinstance(route, ResourceRoute):
                verb = verb_of(route, self.command, query)
            manager = self._field_manager(query, verb)
            fault = self.server.recorder.take_fault(verb, path)
            record = RequestRecord(
                self.command,
                path,
                query,
                verb,
                content_type,
                body,
                manager,
                self.headers.get("User-Agent"),
            )
            if fault is not None:
                if fault.delay and self.server.stopping.wait(fault.delay):
                    self._record(record, 0)  # the server stopped before answering
                    return
                if fault.disconnect:
                    self._record(record, 0)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                error = fault.error()
                if error is not None:
                    if verb == "watch" and error.code == 410:
                        self._record(record, 200)
                        self._stream_error(error)
                    else:
                        self._record(record, error.code)
                        self._send_error(error)
                    return
            if isinstance(route, ResourceRoute) and verb == "watch":
                self._watch(route, query, record)
                return
            status, reply, headers = self._answer(
                route, path, verb, query, content_type, body, manager
            )
            self._record(record, status)
            self._send_json(status, reply, headers)
        except errors.ApiError as exc:
            self._record_failure(path, query, verb, content_type, body, manager, exc.code)
            self._send_error(exc)
        except Exception as exc:
            # A bug in the fake must reach the test as a 500, not as a dropped connection.
            logger.exception("fake API server failed on %s %s", self.command, self.path)
            if self._started:
                self.close_connection = True
                return
            self._record_failure(path, query, verb, content_type, body, manager, 500)
            self._send_error(errors.ApiError(500, f"fake API server error: {exc!r}"))

    def _record_failure(
        self,
        path: str,
        query: dict[str, str],
        verb: str,
        content_type: str | None,
        body: Any,
        manager: str | None,
        code: int,
    ) -> None:
        agent = self.headers.get("User-Agent")
        record = RequestRecord(self.command, path, query, verb, content_type, body, manager, agent)
        self._record(record, code)

    def _answer(
        self,
        route: Discovery | ResourceRoute | None,
        path: str,
        verb: str,
        query: Mapping[str, str],
        content_type: str | None,
        body: Any,
        manager: str | None,
    ) -> tuple[int, Any, dict[str, str]]:
        if isinstance(route, ResourceRoute):
            reply = handle(
                self.server.store,
                route,
                verb,
                Request(self.command, query, content_type, body, manager),
            )
            if (
                verb in ("get", "list")
                and not route.subresource
                and wants_table(self.headers.get("Accept"))
            ):
                items = reply.body["items"] if verb == "list" else [reply.body]
                store = self.server.store
                return 200, table(route.rtype, items, store.resource_version, store.now()), {}
            return reply.status, reply.body, reply.headers
        if self.command != "GET":
            raise errors.ApiError(405, f"the server does not allow this method on {path}")
        document = self._discovery(route, path)
        return 200, document, {}

    def _discovery(self, route: Discovery | None, path: str) -> Any:
        registry = self.server.registry
        document: Any = None
        if route is None:
            if path == "/version":
                document = VERSION_INFO
            elif path in ("/healthz", "/readyz", "/livez"):
                document = "ok"
            elif path == "/openapi/v3":
                document = openapi.v3_root(registry)
            elif path.startswith("/openapi/v3/"):
                document = openapi.v3_document(registry, path.removeprefix("/openapi/v3/"))
            elif path == "/openapi/v2":
                document = openapi.v2_document(registry)
        elif route.group is None:
            document = (
                api_versions(self.server.address) if route.legacy else api_group_list(registry)
            )
        elif route.version is None:
            document = api_group(registry, route.group)
        else:
            document = api_resource_list(registry, route.group, route.version)
        if document is None:
            raise errors.ApiError(404, f"the server could not find the requested resource ({path})")
        return document

    def _watch(self, route: ResourceRoute, query: Mapping[str, str], record: RequestRecord) -> None:
        plan = plan_watch(self.server.store, route, query)
        self._record(record, 200)
        self._started = True
        self.send_response(200)
        self.send_header("Content-Type", _JSON)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        stream_watch(
            self.server.store,
            plan,
            self._write_chunk,
            self.server.stopping,
            client_gone=self._client_gone,
            bookmark_interval_s=self.server.bookmark_interval_s,
        )
        self._end_chunks()

    def _stream_error(self, error: errors.ApiError) -> None:
        self._started = True
        self.send_response(200)
        self.send_header("Content-Type", _JSON)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._write_chunk({"type": "ERROR", "object": error.status()})
        self._end_chunks()

    # ------------------------------------------------------------ helpers

    def _read_body(self) -> bytes | None:
        """The body; None when it is over the server's limit (read and dropped)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BODY_BYTES:
            while length > 0:
                length -= len(self.rfile.read(min(length, 1 << 20)) or b"x" * length)
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _authorize(self) -> None:
        token = self.server.token
        if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
            raise errors.ApiError(401, "Unauthorized")

    def _field_manager(self, query: Mapping[str, str], verb: str) -> str | None:
        if verb not in _WRITE_VERBS:
            return None
        if query.get("fieldManager"):
            return query["fieldManager"]
        agent = self.headers.get("User-Agent") or ""
        # The real server names an unnamed manager after the client's user agent.
        return agent.split("/", 1)[0] or None

    def _record(self, record: RequestRecord, status: int) -> None:
        self.server.recorder.record(
            RequestRecord(
                record.method,
                record.path,
                record.query,
                record.verb,
                record.content_type,
                record.body,
                record.field_manager,
                record.user_agent,
                status,
            )
        )

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain" if isinstance(body, str) else _JSON)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: errors.ApiError) -> None:
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(error.retry_after)
        self._send_json(error.code, error.status(), headers)

    def _write_chunk(self, event: Mapping[str, Any]) -> bool:
        data = json.dumps(event).encode() + b"\n"
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        except OSError:
            self.close_connection = True
            return False
        return True

    def _end_chunks(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _client_gone(self) -> bool:
        """True once the client has closed its end (a readable socket with no data)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
            return peeked == b""
        except (OSError, ValueError):
            return True


def _decode(raw: bytes, content_type: str | None) -> Any:
    if not raw:
        return None
    if content_type and "yaml" in content_type:
        # Server-side apply (and YAML bodies) are out of this fake's scope.
        raise errors.ApiError(415, f"the fake API server does not accept {content_type} bodies")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise errors.bad_request(f"the request body is not valid JSON: {exc}") from exc
