"""Slack's file uploads: ``files.getUploadURLExternal``, the upload URL it hands out, and
``files.completeUploadExternal`` (files.upload is retired).

1. ``files.getUploadURLExternal`` (``filename``, ``length`` in bytes, optional ``alt_txt``
   and ``snippet_type``) returns ``upload_url`` and ``file_id``;
2. a POST of the bytes to ``upload_url``, raw or as a multipart form, answers HTTP 200
   ``OK - <length>``; any other status is a failure. The URL is its own credential (no
   token, as slack_sdk posts it) and works once;
3. ``files.completeUploadExternal`` (``files`` a JSON array of ``{"id", "title"}``, and to
   share: ``channel_id``, ``thread_ts``, ``initial_comment``) shares the files as one
   message, a thread reply when ``thread_ts`` is given. It can be called once per file.

Errors are the ones docs.slack.dev/reference/methods/files.getUploadURLExternal and
…/files.completeUploadExternal list: ``invalid_arguments`` (a missing or malformed
argument), ``missing_argument`` ("typically only occurs when the length provided is 0"),
``alt_txt_too_large`` (over 1,000 characters), ``snippet_too_large`` (a snippet over 1 MB),
``file_upload_size_restricted`` (over ``max_bytes``: Slack's 1 GB per file unless a test
lowers it), ``file_not_found`` ("could not find the file from the upload ticket"),
``channel_not_found`` (``channel_id`` must be a channel ID), ``not_in_channel``.

Where the pages are silent the fake picks, so that nothing passes here that might fail
there: completing a file whose bytes never arrived is ``file_not_found`` (Slack would hold
the call until they do); a second completion is ``file_not_found`` (the ticket is used up);
a ``thread_ts`` that is not a ts is ``invalid_arguments``; sharing into several channels
at once is refused as ``invalid_arguments`` (the fake keeps one channel per file). The
upload URL answers 404 when unknown or already used, and 400 when the bytes' length is not
the declared one (that URL stays usable for the right bytes). A well-formed ``thread_ts``
that names no message is accepted and the share lands nowhere, as chat.postMessage's does.
"""

from __future__ import annotations

import json
import mimetypes
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message as MimeHeaders
from typing import Any

from testbed.slackapi.content_limits import Content
from testbed.slackapi.errors import ApiError
from testbed.slackapi.faults import UPLOAD, Faults
from testbed.slackapi.methods import WebApi
from testbed.slackapi.wire import Reply, fault_reply, text_reply
from testbed.slackapi.workspace import BOT_USER_ID, TEAM_ID, Channel, valid_ts

UPLOAD_PATH = "/upload/v1/"
MAX_FILE_BYTES = 1024**3  # Slack: 1 GB per file
MAX_ALT_TXT = 1000
MAX_SNIPPET_BYTES = 1024**2


@dataclass(frozen=True)
class UploadedFile:
    """A snapshot of one file a ``files.getUploadURLExternal`` call started."""

    id: str
    filename: str
    title: str
    alt_txt: str | None
    content: bytes  # b"" until the bytes arrive
    channel_id: str | None  # where it was shared; None while private
    thread_ts: str | None
    initial_comment: str | None
    completed: bool
    uploaded: bool = False
    message_ts: str | None = None  # the share message


@dataclass
class _Ticket:
    id: str
    filename: str
    length: int
    alt_txt: str | None
    snippet_type: str | None
    created: int
    content: bytes | None = None
    title: str | None = None
    channel_id: str | None = None
    thread_ts: str | None = None
    initial_comment: str | None = None
    completed: bool = False
    message_ts: str | None = None


def _invalid(why: str) -> ApiError:
    return ApiError("invalid_arguments", messages=[f"[ERROR] {why}"])


def _length(value: Any) -> int:
    if value is None or value == "":
        raise _invalid("missing required field: length")
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise _invalid("invalid type for field: length (expected a number of bytes)")
    length = int(str(value).strip())
    if length == 0:
        raise ApiError("missing_argument")
    return length


def _optional(args: dict[str, Any], name: str) -> str | None:
    value = args.get(name)
    return None if value is None or value == "" else str(value)


class Files:
    """The uploads of one fake workspace: tickets, their bytes, and the share messages."""

    def __init__(
        self,
        api: WebApi,
        faults: Faults,
        *,
        base_url: Callable[[], str],
        clock: Callable[[], float],
    ) -> None:
        self.api = api
        self.faults = faults
        self.max_bytes = MAX_FILE_BYTES
        self._base_url = base_url
        self._clock = clock
        self._lock = threading.Lock()
        self._tickets: dict[str, _Ticket] = {}
        self._paths: dict[str, str] = {}  # unused upload path -> file ID
        api.handlers["files.getUploadURLExternal"] = self.get_upload_url
        api.handlers["files.completeUploadExternal"] = self.complete

    # -------------------------------------------------------------- step 1
    def get_upload_url(self, args: dict[str, Any]) -> dict[str, Any]:
        filename = _optional(args, "filename")
        if filename is None or not filename.strip():
            raise _invalid("missing required field: filename")
        length = _length(args.get("length"))
        alt_txt = _optional(args, "alt_txt")
        snippet_type = _optional(args, "snippet_type")
        if alt_txt is not None and len(alt_txt) > MAX_ALT_TXT:
            raise ApiError("alt_txt_too_large")
        if length > self.max_bytes:
            raise ApiError("file_upload_size_restricted")
        if snippet_type is not None and length > MAX_SNIPPET_BYTES:
            raise ApiError("snippet_too_large")
        with self._lock:
            file_id = f"F{len(self._tickets) + 1:010d}"
            path = f"{UPLOAD_PATH}{TEAM_ID}-{file_id}-{secrets.token_urlsafe(24)}"
            created = int(self._clock())
            self._tickets[file_id] = _Ticket(
                file_id, filename, length, alt_txt, snippet_type, created
            )
            self._paths[path] = file_id
        return {"upload_url": f"{self._base_url()}{path}", "file_id": file_id}

    # -------------------------------------------------------------- step 2
    def receive(self, path: str, content_type: str, raw: bytes) -> Reply:
        """A POST to an upload URL: the bytes raw, or the file part of a multipart form."""
        fault = self.faults.take(UPLOAD)
        if fault is not None:
            return fault_reply(fault, webhook=True)  # plain text, as the upload host answers
        with self._lock:
            file_id = self._paths.get(path)
            if file_id is None:
                return text_reply(404, "404 Not Found", "upload_url_not_found")
            ticket = self._tickets[file_id]
            try:
                data = _file_bytes(content_type, raw)
            except ValueError as error:
                return text_reply(400, f"400 Bad Request: {error}", "invalid_upload")
            if len(data) != ticket.length:
                why = f"{len(data)} bytes sent, {ticket.length} declared"
                return text_reply(400, f"400 Bad Request: {why}", "length_mismatch")
            del self._paths[path]
            ticket.content = data
            return text_reply(200, f"OK - {len(data)}")

    # -------------------------------------------------------------- step 3
    def complete(self, args: dict[str, Any]) -> dict[str, Any]:
        requested = _requested_files(args.get("files"))
        channel = self._target(args)
        thread_ts = _optional(args, "thread_ts")
        if thread_ts is not None and (channel is None or not valid_ts(thread_ts)):
            raise _invalid("thread_ts needs one channel_id and a message ts")
        comment = _optional(args, "initial_comment")
        with self._lock:
            tickets = [self._ready(file_id) for file_id, _ in requested]
            for ticket, (_, title) in zip(tickets, requested, strict=True):
                ticket.title = title or ticket.filename
            message_ts = None
            if channel is not None:
                self.api.pace(channel)
                message_ts = self.api.workspace.post(
                    channel,
                    Content(comment or "", [], []),
                    via="api",
                    thread_ts=thread_ts,
                    files=tuple(_wire(t, channel.id) for t in tickets),
                ).ts
            for ticket in tickets:
                ticket.completed = True
                if channel is not None:
                    ticket.channel_id, ticket.message_ts = channel.id, message_ts
                    ticket.thread_ts, ticket.initial_comment = thread_ts, comment
            return {"files": [_wire(t, t.channel_id) for t in tickets]}

    def _ready(self, file_id: str) -> _Ticket:
        ticket = self._tickets.get(file_id)
        if ticket is None or ticket.completed or ticket.content is None:
            raise ApiError("file_not_found")
        return ticket

    def _target(self, args: dict[str, Any]) -> Channel | None:
        refs = [_optional(args, "channel_id") or ""]
        refs += str(args.get("channels") or "").split(",")
        refs = list(dict.fromkeys(r.strip() for r in refs if r.strip()))
        if len(refs) > 100:
            raise ApiError("channels_limit_exceeded")
        if len(refs) > 1:
            raise _invalid("the fake Slack shares a file into one channel only")
        if not refs:
            return None
        channel = self.api.workspace.channel(refs[0])
        if channel.id != refs[0]:  # a name: channel_id takes an ID
            raise ApiError("channel_not_found")
        if not channel.is_member:
            raise ApiError("not_in_channel")
        return channel

    # -------------------------------------------------------------- assertions
    def files(self, channel_id: str | None = None) -> list[UploadedFile]:
        with self._lock:
            return [
                UploadedFile(
                    id=t.id,
                    filename=t.filename,
                    title=t.title or t.filename,
                    alt_txt=t.alt_txt,
                    content=t.content or b"",
                    channel_id=t.channel_id,
                    thread_ts=t.thread_ts,
                    initial_comment=t.initial_comment,
                    completed=t.completed,
                    uploaded=t.content is not None,
                    message_ts=t.message_ts,
                )
                for t in self._tickets.values()
                if channel_id is None or t.channel_id == channel_id
            ]


def _requested_files(value: Any) -> list[tuple[str, str | None]]:
    """``files``: a JSON array (a string in a form) of ``{"id": …, "title": …}``."""
    if value is None or value == "":
        raise _invalid("missing required field: files")
    try:
        items = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        raise _invalid("files must be a JSON array") from None
    if not isinstance(items, list) or not items:
        raise _invalid("files must be a non-empty JSON array")
    requested: list[tuple[str, str | None]] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise _invalid("each entry of files needs an id")
        title = item.get("title")
        requested.append((item["id"], None if title is None else str(title)))
    if len({file_id for file_id, _ in requested}) != len(requested):
        raise _invalid("files names a file twice")
    return requested


def _wire(ticket: _Ticket, channel_id: str | None) -> dict[str, Any]:
    """The file object as the Web API shows it (the fields a client reads)."""
    mimetype = mimetypes.guess_type(ticket.filename)[0] or "application/octet-stream"
    extension = ticket.filename.rsplit(".", 1)[1].lower() if "." in ticket.filename else ""
    body: dict[str, Any] = {
        "id": ticket.id,
        "created": ticket.created,
        "timestamp": ticket.created,
        "name": ticket.filename,
        "title": ticket.title or ticket.filename,
        "mimetype": "text/plain" if ticket.snippet_type else mimetype,
        "filetype": ticket.snippet_type or extension or "binary",
        "user": BOT_USER_ID,
        "user_team": TEAM_ID,
        "mode": "snippet" if ticket.snippet_type else "hosted",
        "size": ticket.length,
        "is_external": False,
        "is_public": channel_id is not None,
        "channels": [channel_id] if channel_id is not None else [],
    }
    if ticket.alt_txt is not None:
        body["alt_txt"] = ticket.alt_txt
    return body


def _file_bytes(content_type: str, raw: bytes) -> bytes:
    """The uploaded bytes: the body itself, or a multipart form's file part."""
    headers = MimeHeaders()
    headers["Content-Type"] = content_type or "application/octet-stream"
    if headers.get_content_type() != "multipart/form-data":
        return raw  # urllib labels raw bytes x-www-form-urlencoded; they stay raw
    boundary = headers.get_param("boundary")
    if not isinstance(boundary, str) or not boundary:
        raise ValueError("a multipart body needs a boundary")
    fields: dict[str, bytes] = {}
    for chunk in raw.split(b"--" + boundary.encode("latin-1"))[1:]:
        if chunk.startswith(b"--"):
            break
        head, sep, body = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        if not sep:
            raise ValueError("a multipart part without headers")
        part = MimeHeaders()
        for line in head.decode("latin-1").split("\r\n"):
            name, colon, value = line.partition(":")
            if colon:
                part[name.strip()] = value.strip()
        body = body.removesuffix(b"\r\n")
        if part.get_param("filename", header="content-disposition") is not None:
            return body
        fields[str(part.get_param("name", header="content-disposition") or "")] = body
    for name in ("file", "filename"):
        if name in fields:
            return fields[name]
    raise ValueError("the form has no file part")
