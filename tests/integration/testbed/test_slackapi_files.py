"""The fake Slack's file uploads: files.getUploadURLExternal, the upload URL and
files.completeUploadExternal, driven by the real slack_sdk (files_upload_v2) and raw HTTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from testbed.slackapi import UPLOAD, FakeSlack
from tests.integration.testbed.slack_fixtures import (  # noqa: F401 - fixtures
    TOKEN,
    fake_slack_fixture,
    slack_client_fixture,
)

BYTES = bytes(range(256)) + b"\r\n--boundary\r\n\x00" * 3  # every byte value, CRLFs, a NUL


def _error(call: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        call(*args, **kwargs)
    return str(raised.value.response["error"])


def _post(url: str, body: bytes, content_type: str | None = None) -> tuple[int, str]:
    """POST raw bytes as a bare HTTP client would: no token."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    request = urllib.request.Request(url, data=body, method="POST", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read().decode()


def _multipart(field: str, data: bytes, filename: str | None = "report.png") -> tuple[bytes, str]:
    boundary = "fakeslackBoundary7MA4YWxk"
    disposition = f'form-data; name="{field}"' + (f'; filename="{filename}"' if filename else "")
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="note"\r\n\r\nnot the file\r\n'
            f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _ticket(client: WebClient, length: int, filename: str = "a.bin") -> tuple[str, str]:
    got = client.files_getUploadURLExternal(filename=filename, length=length)
    return str(got["file_id"]), str(got["upload_url"])


def _uploaded(client: WebClient, data: bytes = b"abc") -> str:
    file_id, url = _ticket(client, len(data))
    assert _post(url, data) == (200, f"OK - {len(data)}")
    return file_id


# ---------------------------------------------------------------------- the whole flow


def test_files_upload_v2_into_a_thread_keeps_the_bytes_and_replies_with_the_comment(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    parent = slack_client.chat_postMessage(channel="C0123", text="GPU idle")
    done = slack_client.files_upload_v2(
        channel="C0123",
        thread_ts=parent["ts"],
        content=BYTES,
        filename="usage.png",
        title="GPU usage, last 6h",
        alt_txt="a flat line at 0%",
        initial_comment="What the GPU did",
    )
    [uploaded] = fake_slack.files()
    assert done["file"]["id"] == uploaded.id
    assert uploaded.content == BYTES
    assert (uploaded.filename, uploaded.title, uploaded.alt_txt) == (
        "usage.png",
        "GPU usage, last 6h",
        "a flat line at 0%",
    )
    assert (uploaded.channel_id, uploaded.thread_ts) == ("C0123", parent["ts"])
    assert (uploaded.initial_comment, uploaded.completed) == ("What the GPU did", True)
    assert fake_slack.files("gpu-alerts") == [uploaded]
    assert fake_slack.files("C0456") == []

    [thread] = fake_slack.messages("gpu-alerts")
    [reply] = thread.replies
    assert (reply.text, reply.thread_ts, reply.ts) == (
        "What the GPU did",
        parent["ts"],
        uploaded.message_ts,
    )
    [shown] = reply.files
    assert {k: shown[k] for k in ("id", "name", "title", "mimetype", "size")} == {
        "id": uploaded.id,
        "name": "usage.png",
        "title": "GPU usage, last 6h",
        "mimetype": "image/png",
        "size": len(BYTES),
    }
    wire = slack_client.conversations_replies(channel="C0123", ts=parent["ts"])["messages"]
    assert wire[0]["reply_count"] == 1
    assert wire[0]["latest_reply"] == reply.ts
    assert "subtype" not in wire[1]
    assert wire[1]["files"][0]["id"] == uploaded.id
    history = slack_client.conversations_history(channel="C0123")["messages"]
    assert [m["ts"] for m in history] == [parent["ts"]]  # a reply, not a channel message


def test_a_file_without_a_thread_is_a_channel_message(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    slack_client.files_upload_v2(channel="C0123", content="text", filename="notes.txt")
    [message] = fake_slack.messages("C0123")
    assert (message.text, message.files[0]["title"], message.files[0]["mimetype"]) == (
        "",
        "notes.txt",
        "text/plain",
    )
    [wire] = slack_client.conversations_history(channel="C0123")["messages"]
    assert wire["files"][0]["name"] == "notes.txt"
    assert wire["upload"] is True


def test_completing_without_a_channel_keeps_the_file_private(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    file_id = _uploaded(slack_client)
    done = slack_client.files_completeUploadExternal(files=[{"id": file_id, "title": "t"}])
    assert done["files"][0]["id"] == file_id
    [uploaded] = fake_slack.files()
    assert (uploaded.completed, uploaded.channel_id, uploaded.title) == (True, None, "t")
    assert fake_slack.messages("C0123") == []


def test_a_thread_ts_that_names_no_message_is_accepted_and_shown_nowhere(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    slack_client.files_upload_v2(channel="C0123", thread_ts="1.000001", content=b"x", filename="x")
    assert fake_slack.messages("C0123") == []
    assert [m.files[0]["name"] for m in fake_slack.orphan_replies("C0123")] == ["x"]


# ---------------------------------------------------------------------- files.getUploadURLExternal


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"length": 3}, "invalid_arguments"),
        ({"filename": "", "length": 3}, "invalid_arguments"),
        ({"filename": "a.txt"}, "invalid_arguments"),
        ({"filename": "a.txt", "length": "three"}, "invalid_arguments"),
        ({"filename": "a.txt", "length": -3}, "invalid_arguments"),
        ({"filename": "a.txt", "length": 0}, "missing_argument"),
        ({"filename": "a.png", "length": 3, "alt_txt": "a" * 1001}, "alt_txt_too_large"),
        ({"filename": "a.py", "length": 2**20 + 1, "snippet_type": "python"}, "snippet_too_large"),
        ({"filename": "a.bin", "length": 2**30 + 1}, "file_upload_size_restricted"),
    ],
    ids=[
        "no-filename",
        "empty-filename",
        "no-length",
        "length-not-a-number",
        "negative-length",
        "zero-length",
        "alt-txt-over-1000",
        "snippet-over-1mb",
        "over-1gb",
    ],
)
def test_get_upload_url_refuses_what_slack_refuses(
    slack_client: WebClient, params: dict[str, Any], error: str
) -> None:
    assert _error(slack_client.api_call, "files.getUploadURLExternal", params=params) == error


def test_get_upload_url_needs_a_token(fake_slack: FakeSlack) -> None:
    anonymous = WebClient(base_url=fake_slack.api_base_url, timeout=5)
    assert _error(anonymous.files_getUploadURLExternal, filename="a", length=1) == "not_authed"
    assert fake_slack.files() == []


def test_a_lowered_size_limit_refuses_files_upload_v2(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    fake_slack.uploads.max_bytes = 10
    error = _error(slack_client.files_upload_v2, channel="C0123", content=b"x" * 11, filename="f")
    assert error == "file_upload_size_restricted"
    slack_client.files_upload_v2(channel="C0123", content=b"x" * 10, filename="f")


# ---------------------------------------------------------------------- the upload URL


def test_the_upload_url_takes_raw_bytes_once_and_without_a_token(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    _file_id, url = _ticket(slack_client, len(BYTES))
    assert url.startswith(fake_slack.url + "/upload/v1/")
    assert _post(url, BYTES, "application/octet-stream") == (200, f"OK - {len(BYTES)}")
    assert _post(url, BYTES, "application/octet-stream")[0] == 404  # used up
    assert fake_slack.files()[0].content == BYTES
    [recorded] = fake_slack.requests_for(UPLOAD)[:1]
    assert recorded.status == 200
    assert "Authorization" not in recorded.headers


def test_the_upload_url_takes_a_multipart_form(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    _file_id, url = _ticket(slack_client, len(BYTES))
    body, content_type = _multipart("filename", BYTES)
    assert _post(url, body, content_type) == (200, f"OK - {len(BYTES)}")
    _second_id, second_url = _ticket(slack_client, 3)
    body, content_type = _multipart("file", b"abc", filename=None)  # a plain field named file
    assert _post(second_url, body, content_type)[0] == 200
    assert [f.content for f in fake_slack.files()] == [BYTES, b"abc"]


def test_the_upload_url_refuses_other_lengths_unknown_paths_and_empty_forms(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    _file_id, url = _ticket(slack_client, 3)
    assert _post(url, b"ab")[0] == 400
    assert _post(url, b"abcd")[0] == 400
    assert _post(url, b"", "multipart/form-data; boundary=x")[0] == 400
    assert _post(url + "x", b"abc")[0] == 404
    assert _post(fake_slack.url + "/upload/v1/T000-F0000000001-guess", b"abc")[0] == 404
    assert fake_slack.files()[0].uploaded is False
    assert _post(url, b"abc")[0] == 200  # a refused upload leaves the URL usable


def test_faults_reach_the_upload_url(fake_slack: FakeSlack, slack_client: WebClient) -> None:
    _file_id, url = _ticket(slack_client, 3)
    fake_slack.rate_limit(UPLOAD, retry_after=7)
    fake_slack.fail(UPLOAD, status=503)
    with pytest.raises(urllib.error.HTTPError) as limited:
        urllib.request.urlopen(urllib.request.Request(url, data=b"abc"), timeout=5)  # noqa: S310
    with limited.value:
        assert (limited.value.code, limited.value.headers["Retry-After"]) == (429, "7")
    assert _post(url, b"abc")[0] == 503
    assert _post(url, b"abc")[0] == 200


# ------------------------------------------------------------------ files.completeUploadExternal


def test_complete_refuses_unknown_unuploaded_and_completed_files(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    complete = slack_client.files_completeUploadExternal
    assert _error(complete, files=[{"id": "F0NEVERISSUED"}]) == "file_not_found"
    never_sent, _ = _ticket(slack_client, 3)
    assert _error(complete, files=[{"id": never_sent}], channel_id="C0123") == "file_not_found"
    done = _uploaded(slack_client)
    complete(files=[{"id": done}], channel_id="C0123")
    assert _error(complete, files=[{"id": done}], channel_id="C0123") == "file_not_found"
    assert len(fake_slack.messages("C0123")) == 1


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"channel_id": "C0NOSUCH"}, "channel_not_found"),
        ({"channel_id": "gpu-alerts"}, "channel_not_found"),  # channel_id takes an ID
        ({"channel_id": "C0999"}, "not_in_channel"),
        ({"channel_id": "C0123", "thread_ts": "yesterday"}, "invalid_arguments"),
        ({"thread_ts": "1.000001"}, "invalid_arguments"),  # a thread needs a channel
        ({"channel_id": "C0123", "channels": "C0456"}, "invalid_arguments"),
        ({"channels": ",".join(f"C{i:04d}" for i in range(101))}, "channels_limit_exceeded"),
    ],
    ids=[
        "unknown-channel",
        "channel-name",
        "not-a-member",
        "bad-thread-ts",
        "thread-without-channel",
        "two-channels",
        "over-100-channels",
    ],
)
def test_complete_refuses_where_the_bot_cannot_share_and_the_file_stays_completable(
    fake_slack: FakeSlack, slack_client: WebClient, args: dict[str, Any], error: str
) -> None:
    file_id = _uploaded(slack_client)
    params = {"files": json.dumps([{"id": file_id}]), **args}
    assert _error(slack_client.api_call, "files.completeUploadExternal", params=params) == error
    assert fake_slack.files()[0].completed is False
    slack_client.files_completeUploadExternal(files=[{"id": file_id}], channel_id="C0456")
    assert fake_slack.files("C0456")[0].completed is True


@pytest.mark.parametrize(
    "files",
    [
        None,
        "",
        "not json",
        "[]",
        '{"id": "F1"}',
        '[{"title": "no id"}]',
        '[{"id": "F1"}, {"id": "F1"}]',
    ],
    ids=["missing", "empty", "not-json", "empty-array", "not-an-array", "no-id", "twice"],
)
def test_complete_refuses_a_malformed_files_argument(
    slack_client: WebClient, files: str | None
) -> None:
    params = {"channel_id": "C0123"} if files is None else {"files": files, "channel_id": "C0123"}
    error = _error(slack_client.api_call, "files.completeUploadExternal", params=params)
    assert error == "invalid_arguments"


def test_completing_into_a_deleted_thread_is_refused(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    parent = slack_client.chat_postMessage(channel="C0123", text="GPU idle")
    slack_client.chat_delete(channel="C0123", ts=parent["ts"])
    error = _error(
        slack_client.files_upload_v2,
        channel="C0123",
        thread_ts=parent["ts"],
        content=b"x",
        filename="x",
    )
    assert error == "thread_not_found"


def test_a_rate_limited_complete_leaves_the_file_completable(
    fake_slack: FakeSlack, slack_client: WebClient
) -> None:
    file_id = _uploaded(slack_client)
    fake_slack.rate_limit("files.completeUploadExternal", retry_after=3)
    with pytest.raises(SlackApiError) as raised:
        slack_client.files_completeUploadExternal(files=[{"id": file_id}], channel_id="C0123")
    assert raised.value.response.status_code == 429
    assert raised.value.response.headers["Retry-After"] == "3"
    slack_client.files_completeUploadExternal(files=[{"id": file_id}], channel_id="C0123")
    assert fake_slack.files("C0123")[0].completed is True
    assert TOKEN not in str(fake_slack.files())
