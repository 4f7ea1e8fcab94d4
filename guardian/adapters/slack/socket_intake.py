"""Clicks over Socket Mode: an outbound websocket, so no public endpoint is needed.

slack_sdk's builtin Socket Mode client (stdlib only) opens the connection with the
app-level token (``apps.connections.open``), answers pings, and reconnects when Slack
asks it to (``disconnect``) or the link breaks. Each ``interactive`` envelope goes to
``accept``; it is acked once ``accept`` says the click is safely recorded. An envelope
that is not acked is delivered again by Slack, so a click recorded nowhere is not lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.socket_mode.builtin import SocketModeClient
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from guardian_common.redact import RedactFilter, Secret, Secrets

logger = logging.getLogger(__name__)

Accept = Callable[[dict[str, Any]], bool]  # True: recorded, ack it


class SocketModeListener:
    def __init__(self, app_token: Secret, api_url: str, accept: Accept) -> None:
        self._token = app_token
        self._api_url = api_url
        self._accept = accept
        self._client: SocketModeClient | None = None

    def start(self) -> None:
        if self._client is not None:
            return
        sdk = logging.Logger(f"{__name__}.sdk")  # noqa: LOG001 - private: its own filter
        sdk.parent = logger
        sdk.addFilter(RedactFilter(Secrets(self._token)))
        client = SocketModeClient(
            app_token=self._token.reveal(),
            web_client=WebClient(base_url=self._api_url, logger=sdk),
            logger=sdk,
            auto_reconnect_enabled=True,
        )
        client.socket_mode_request_listeners.append(self._on_request)
        client.connect()
        self._client = client
        logger.info("slack: Socket Mode connected; buttons are live")

    def stop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.close()

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.is_connected()

    def _on_request(self, client: BaseSocketModeClient, request: SocketModeRequest) -> None:
        accepted = True
        if request.type == "interactive" and request.payload.get("type") == "block_actions":
            try:
                accepted = self._accept(request.payload)
            except Exception:  # per envelope: unacked, Slack delivers it again
                logger.exception("slack: could not take a click; Slack will send it again")
                accepted = False
        if accepted:
            client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))
