"""The fake Slack's HTTP side: Web API and incoming webhooks on a loopback port.

It speaks Slack's wire protocol, so the real ``slack_sdk.WebClient`` (with
``base_url=fake.api_base_url``) and ``slack_sdk.webhook.WebhookClient`` run
against it unchanged. Pure stdlib: the simulators may not import slack_sdk.
"""

from __future__ import annotations

import logging
import socket
import socketserver
import struct
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from guardian_common.stop_on_exit import StopOnExit
from testbed.slackapi.errors import ApiError, Throttled
from testbed.slackapi.faults import UPLOAD, WEBHOOK, ChannelPacer, Fault, Faults
from testbed.slackapi.files import UPLOAD_PATH, Files, UploadedFile
from testbed.slackapi.interactions import Ephemeral, People, post_signed
from testbed.slackapi.methods import WebApi
from testbed.slackapi.socket_mode import Delivery, SocketModeHub
from testbed.slackapi.webhooks import Webhooks
from testbed.slackapi.websocket import WebSocket, accept_key
from testbed.slackapi.wire import Reply, fault_reply, json_reply, parse_body, text_reply
from testbed.slackapi.workspace import Channel, Message, Workspace

logger = logging.getLogger(__name__)

OutageMode = Literal["refuse", "reset", "unavailable"]
DEFAULT_CHANNELS = (Channel("C0123", "gpu-alerts"),)
# Methods Slack answers without a token.
_NO_AUTH = frozenset({"api.test"})


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received and answered it."""

    method: str  # the Web API method, or WEBHOOK
    http_method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None  # the parsed arguments or webhook payload
    raw_body: bytes
    received_at: float
    status: int
    error: str | None  # Slack's error code, None when the call succeeded


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], fake: FakeSlack) -> None:
        self.fake = fake
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup; loopback needs none.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10  # a client that connects and sends nothing cannot hold a thread
    server_version = "FakeSlack"

    def handle(self) -> None:
        if self.server.fake.outage == "reset":
            # Linger 0 makes close() send RST: the client sees "connection reset".
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        super().handle()

    def do_POST(self) -> None:
        try:
            if self.headers.get("Upgrade", "").lower() == "websocket":
                self.server.fake._upgrade(self)
                return
            self.server.fake._serve(self)
        except Exception:
            # A bug in the fake must show as a failed call, not a hung client.
            logger.exception("fake slack: failed to answer %s %s", self.command, self.path)
            self.send_error(500)

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:
        # Never the headers: they carry the token.
        logger.debug("fake slack: " + format, *args)  # noqa: G003


class FakeSlack(StopOnExit):
    """A running fake Slack workspace. Create it with :meth:`start`."""

    def __init__(
        self,
        *,
        tokens: Iterable[str] = ("xoxb-test",),
        channels: Iterable[Channel] = DEFAULT_CHANNELS,
        clock: Callable[[], float] = time.time,
        channel_rate: float | None = None,
        channel_burst: int = 1,
        app_tokens: Iterable[str] = ("xapp-test",),
        ack_timeout: float = 3.0,
    ) -> None:
        self.tokens = frozenset(tokens)
        self.clock = clock
        self.workspace = Workspace(channels, clock)
        self.pacer = (
            ChannelPacer(channel_rate, channel_burst, clock) if channel_rate is not None else None
        )
        self.faults = Faults()
        self.api = WebApi(self.workspace, base_url=lambda: self.url, pacer=self.pacer)
        self.outage: OutageMode | None = None
        self.webhooks = Webhooks(self.api, self.faults)
        self.socket_mode = SocketModeHub(frozenset(app_tokens), clock, ack_timeout=ack_timeout)
        self.people = People(self.workspace, clock)
        self.api.handlers["chat.postEphemeral"] = self.people.post_ephemeral
        self.api.handlers["usergroups.users.list"] = self.people.usergroup_users
        self.uploads = Files(self.api, self.faults, base_url=lambda: self.url, clock=clock)
        self._log: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._address: tuple[str, int] | None = None
        self._stopped = False

    # -------------------------------------------------------------- lifecycle
    @classmethod
    def start(
        cls,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tokens: Iterable[str] = ("xoxb-test",),
        channels: Iterable[Channel] = DEFAULT_CHANNELS,
        clock: Callable[[], float] = time.time,
        channel_rate: float | None = None,
        channel_burst: int = 1,
        app_tokens: Iterable[str] = ("xapp-test",),
        ack_timeout: float = 3.0,
    ) -> FakeSlack:
        """Start serving on ``host:port`` (0: a free port) and return the handle."""
        fake = cls(
            tokens=tokens,
            channels=channels,
            clock=clock,
            channel_rate=channel_rate,
            channel_burst=channel_burst,
            app_tokens=app_tokens,
            ack_timeout=ack_timeout,
        )
        fake._listen(host, port)
        return fake

    def _listen(self, host: str, port: int) -> None:
        server = _Server((host, port), self)
        self._address = (server.server_name, server.server_port)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-slack-{server.server_port}",
            daemon=True,
        )
        self._thread.start()

    def _close(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()  # also joins the request threads
        if thread is not None:
            thread.join()

    def stop(self) -> None:
        """Stop serving and close every socket. Safe to call twice."""
        self._stopped = True
        self.socket_mode.close()
        self._close()

    @property
    def url(self) -> str:
        if self._address is None:
            raise RuntimeError("the fake Slack was never started; use FakeSlack.start()")
        host, port = self._address
        return f"http://{host}:{port}"

    @property
    def api_base_url(self) -> str:
        """Pass as ``WebClient(base_url=...)``."""
        return f"{self.url}/api/"

    # -------------------------------------------------------------- outages
    def down(self, mode: OutageMode = "refuse") -> None:
        """Simulate an outage: ``refuse`` connections (the port closes), ``reset``
        them after accepting, or answer every call HTTP 503 (``unavailable``)."""
        self.outage = mode
        if mode == "refuse":
            self._close()
        elif self._server is None and not self._stopped and self._address is not None:
            self._listen(*self._address)  # from refusing to answering

    def up(self) -> None:
        """End an outage; a refused port is bound again at the same address."""
        self.outage = None
        if self._server is None and not self._stopped and self._address is not None:
            self._listen(*self._address)

    # -------------------------------------------------------------- faults
    def rate_limit(self, method: str, count: int = 1, retry_after: int = 1) -> None:
        """The next ``count`` calls of ``method`` (or WEBHOOK, or ANY) get 429 + Retry-After."""
        if retry_after < 0:
            raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after}")
        self.faults.add(method, Fault(429, retry_after), count)

    def fail(self, method: str, status: int = 503, count: int = 1) -> None:
        """The next ``count`` calls of ``method`` (or WEBHOOK, or ANY) get HTTP ``status``."""
        if not 500 <= status <= 599:
            raise ValueError(f"fail() injects 5xx answers, got {status}")
        self.faults.add(method, Fault(status), count)

    def delete_message(self, channel: str, ts: str) -> None:
        """Delete a message as a user would; a later chat.update gets message_not_found."""
        self.workspace.delete(self.workspace.channel(channel), ts, via_api=False)

    def add_channel(self, channel: Channel) -> None:
        self.workspace.add_channel(channel)

    # -------------------------------------------------------------- webhooks
    def webhook_url(self, channel: str) -> str:
        """A new incoming-webhook URL that posts into ``channel``."""
        try:
            target = self.workspace.channel(channel)
        except ApiError:
            raise LookupError(f"no channel {channel!r} in the fake Slack workspace") from None
        return f"{self.url}{self.webhooks.register(target.id)}"

    def revoke_webhook(self, url: str) -> None:
        """Later posts to ``url`` get 404 ``no_service``."""
        self.webhooks.revoke(urllib.parse.urlsplit(url).path)

    # -------------------------------------------------------------- people
    def add_usergroup(self, group: str, users: Iterable[str]) -> None:
        """A user group (``S…``) and its members, for ``usergroups.users.list``."""
        self.people.usergroups[group] = tuple(users)

    def click(self, user: str, channel: str, ts: str, action_id: str) -> Delivery:
        """``user`` presses the button ``action_id`` on message ``ts``: a ``block_actions``
        envelope over Socket Mode. Raises LookupError when the message has no such button."""
        payload = self.people.block_actions(self.url, channel, ts, action_id, user)
        return self.socket_mode.deliver("interactive", payload)

    def redeliver(self, delivery: Delivery) -> Delivery:
        """The same payload again, as a new envelope (a double click's twin)."""
        return self.socket_mode.deliver(delivery.type, delivery.payload)

    def click_http(
        self,
        url: str,
        signing_secret: str,
        user: str,
        channel: str,
        ts: str,
        action_id: str,
        *,
        timestamp: float | None = None,
        tamper: bool = False,
    ) -> tuple[int, bytes]:
        """The same click sent to an HTTP Request URL, signed (``tamper``: the body is
        changed after signing; ``timestamp``: the request's, default the clock's)."""
        payload = self.people.block_actions(self.url, channel, ts, action_id, user)
        stamp = self.clock() if timestamp is None else timestamp
        return post_signed(url, payload, signing_secret, timestamp=stamp, tamper=tamper)

    def ephemerals(self, user: str | None = None) -> list[Ephemeral]:
        """Messages only one user saw (chat.postEphemeral, response_url answers)."""
        return self.people.ephemerals(user)

    # -------------------------------------------------------------- assertions
    def messages(self, channel: str, *, include_deleted: bool = False) -> list[Message]:
        """Parents oldest first, each with ``replies`` (oldest first) and ``edits``."""
        return self.workspace.conversation(
            self.workspace.channel(channel), include_deleted=include_deleted
        )

    def orphan_replies(self, channel: str) -> list[Message]:
        """Replies posted with a ``thread_ts`` no message has: Slack shows them nowhere."""
        return self.workspace.orphans(self.workspace.channel(channel))

    def files(self, channel_id: str | None = None) -> list[UploadedFile]:
        """Every upload started, oldest first; ``channel_id``: those shared there."""
        shared = None if channel_id is None else self.workspace.channel(channel_id).id
        return self.uploads.files(shared)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def requests_for(self, method: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == method]

    # -------------------------------------------------------------- serving
    def _serve(self, handler: _Handler) -> None:
        received_at = self.clock()
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        split = urllib.parse.urlsplit(handler.path)
        webhook = split.path.startswith("/services/")
        method = WEBHOOK if webhook else split.path.removeprefix("/api/")
        body: dict[str, Any] | None = None
        if self.outage == "unavailable":
            reply = text_reply(503, "503 Service Unavailable", "server_error")
        elif webhook:
            content_type = handler.headers.get("Content-Type", "")
            body, reply = self.webhooks.handle(split.path, content_type, raw)
        elif split.path.startswith("/actions/"):
            method = "response_url"
            status, text = self.people.respond(split.path, raw)
            reply = text_reply(status, text, None if status == 200 else text)
        elif split.path.startswith("/api/"):
            body, reply = self._web_api(method, split.query, handler, raw)
        elif split.path.startswith(UPLOAD_PATH):  # no token: the URL is the credential
            method = UPLOAD
            reply = self.uploads.receive(split.path, handler.headers.get("Content-Type", ""), raw)
        else:
            reply = text_reply(404, "404 Not Found", "not_found")
        with self._lock:
            self._log.append(
                RecordedRequest(
                    method=method,
                    http_method=handler.command,
                    path=split.path,
                    headers=dict(handler.headers.items()),
                    body=body,
                    raw_body=raw,
                    received_at=received_at,
                    status=reply.status,
                    error=reply.error,
                )
            )
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Content-Length", str(len(reply.body)))
        if reply.retry_after is not None:
            handler.send_header("Retry-After", str(reply.retry_after))
        handler.end_headers()
        handler.wfile.write(reply.body)

    def _web_api(
        self, method: str, query: str, handler: _Handler, raw: bytes
    ) -> tuple[dict[str, Any] | None, Reply]:
        content_type = handler.headers.get("Content-Type", "")
        args: dict[str, Any] = dict(urllib.parse.parse_qsl(query, keep_blank_values=True))
        try:
            args.update(parse_body(content_type, raw))
        except ApiError as error:
            return None, json_reply(error.body(), error.status)
        fault = self.faults.take(method)
        if fault is not None:
            return args, fault_reply(fault, webhook=False)
        try:
            if method == "apps.connections.open":
                bearer = handler.headers.get("Authorization") or ""
                token = bearer.removeprefix("Bearer ").strip() or args.get("token")
                ws_base = self.url.replace("http://", "ws://", 1)
                return args, json_reply({"ok": True, **self.socket_mode.open(token, ws_base)})
            if method not in _NO_AUTH:
                self._authenticate(handler.headers.get("Authorization"), args, content_type)
            return args, json_reply(self.api.call(method, args))
        except ApiError as error:
            return args, json_reply(error.body(), error.status)
        except Throttled as throttled:
            return args, fault_reply(Fault(429, throttled.retry_after), webhook=False)

    def _upgrade(self, handler: _Handler) -> None:
        """A Socket Mode websocket: the one-time ticket from apps.connections.open."""
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query)
        ticket = (query.get("ticket") or [""])[0]
        key = handler.headers.get("Sec-WebSocket-Key", "")
        if not key or not self.socket_mode.take_ticket(ticket):
            handler.send_error(401 if key else 400)
            return
        handler.send_response(101, "Switching Protocols")
        handler.send_header("Upgrade", "websocket")
        handler.send_header("Connection", "Upgrade")
        handler.send_header("Sec-WebSocket-Accept", accept_key(key))
        handler.end_headers()
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.settimeout(0.5)
        self.socket_mode.serve(WebSocket(handler.connection))

    def _authenticate(self, authorization: str | None, args: dict[str, Any], ctype: str) -> None:
        token = None
        if authorization and authorization.startswith("Bearer "):
            token = authorization.removeprefix("Bearer ").strip()
        elif not ctype.startswith("application/json"):
            # A form body may carry the token; a JSON body may not (Slack ignores it).
            token = args.get("token")
        if not token:
            raise ApiError("not_authed")
        if token not in self.tokens:
            raise ApiError("invalid_auth")
