"""WebApiTransport.upload against the fake Slack: the file lands in the thread, and Slack's
refusals are sorted like every other call's (permanent, rate-limited, uncertain)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from guardian.adapters.slack.transport import (
    FileUpload,
    MessageGone,
    RateLimited,
    Rejected,
    Secret,
    Unauthorized,
    Uncertain,
    WebApiTransport,
    WebhookTransport,
)
from testbed.slackapi import UPLOAD, Channel, FakeSlack
from tests.integration.notify.helpers import ALERTS, TEAM, TOKEN

NOT_JOINED = Channel("C0999", "finance", is_member=False)
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    with FakeSlack.start(tokens=[TOKEN], channels=[ALERTS, TEAM, NOT_JOINED]) as started:
        yield started


def _web(fake: FakeSlack, token: str = TOKEN) -> WebApiTransport:
    return WebApiTransport(
        Secret(token), base_url=fake.api_base_url, timeout=5, rate_limit_retries=0
    )


def _file(channel_id: str = "C0123", thread_ts: str | None = None) -> FileUpload:
    return FileUpload(
        channel_id=channel_id,
        thread_ts=thread_ts,
        filename="gpu-usage.png",
        title="GPU usage, last 6h",
        content=PNG,
        alt_txt="GPU utilisation flat at 0%",
        initial_comment="Evidence for the idle alert",
    )


def test_upload_shares_the_bytes_in_the_thread_and_returns_the_file_id(fake: FakeSlack) -> None:
    web = _web(fake)
    parent = web.post("C0123", {"text": "GPU idle"}, None)
    assert parent.ts is not None
    file_id = web.upload(_file(thread_ts=parent.ts))
    [uploaded] = fake.files("C0123")
    assert (uploaded.id, uploaded.content, uploaded.thread_ts) == (file_id, PNG, parent.ts)
    assert (uploaded.title, uploaded.alt_txt) == (
        "GPU usage, last 6h",
        "GPU utilisation flat at 0%",
    )
    [reply] = fake.messages("C0123")[0].replies
    assert reply.text == "Evidence for the idle alert"
    assert [f["id"] for f in reply.files] == [file_id]


@pytest.mark.parametrize(
    ("upload", "kind", "error"),
    [
        (_file("C0NOSUCH"), Rejected, "channel_not_found"),
        (_file("gpu-alerts"), Rejected, "channel_not_found"),
        (_file("C0999"), Rejected, "not_in_channel"),
        (_file(thread_ts="not-a-ts"), Rejected, "invalid_arguments"),
    ],
    ids=["unknown-channel", "channel-name", "not-a-member", "bad-thread-ts"],
)
def test_a_refused_upload_is_permanent(
    fake: FakeSlack, upload: FileUpload, kind: type[Exception], error: str
) -> None:
    with pytest.raises(kind, match=error):
        _web(fake).upload(upload)
    assert [f.completed for f in fake.files()] == [False]


def test_an_upload_into_a_deleted_thread_is_gone(fake: FakeSlack) -> None:
    web = _web(fake)
    parent = web.post("C0123", {"text": "GPU idle"}, None)
    assert parent.ts is not None
    fake.delete_message("C0123", parent.ts)
    with pytest.raises(MessageGone, match="thread_not_found"):
        web.upload(_file(thread_ts=parent.ts))


def test_a_file_over_the_size_limit_is_permanent(fake: FakeSlack) -> None:
    fake.uploads.max_bytes = len(PNG) - 1
    with pytest.raises(Rejected, match="file_upload_size_restricted"):
        _web(fake).upload(_file())
    assert fake.files() == []


@pytest.mark.parametrize("method", ["files.getUploadURLExternal", "files.completeUploadExternal"])
def test_a_rate_limited_step_says_when_to_retry(fake: FakeSlack, method: str) -> None:
    fake.rate_limit(method, retry_after=9)
    with pytest.raises(RateLimited) as raised:
        _web(fake).upload(_file())
    assert raised.value.delay == 9
    assert "429" in str(raised.value)


def test_the_upload_url_refusing_is_sorted_by_its_status(fake: FakeSlack) -> None:
    web = _web(fake)
    fake.rate_limit(UPLOAD, retry_after=4)
    with pytest.raises(RateLimited) as limited:
        web.upload(_file())
    assert limited.value.delay == 4
    fake.fail(UPLOAD, status=502)
    with pytest.raises(Uncertain, match="HTTP 502"):
        web.upload(_file())
    assert fake.files("C0123") == []
    web.upload(_file())
    assert [f.completed for f in fake.files()] == [False, False, True]


def test_auth_and_network_failures(fake: FakeSlack) -> None:
    with pytest.raises(Unauthorized, match="invalid_auth") as refused:
        _web(fake, TOKEN + "-revoked").upload(_file())
    web = _web(fake)
    fake.fail("files.completeUploadExternal", status=503)
    with pytest.raises(Uncertain) as unavailable:
        web.upload(_file())
    fake.down("refuse")
    with pytest.raises(Uncertain) as down:
        web.upload(_file())
    for error in (refused.value, unavailable.value, down.value):
        text = f"{error} {error!r} {error.args}"
        assert TOKEN not in text
        assert "/upload/v1/" not in text
        assert error.__cause__ is None


def test_a_webhook_cannot_upload(fake: FakeSlack) -> None:
    hook = WebhookTransport(Secret(fake.webhook_url("gpu-alerts")), timeout=5)
    with pytest.raises(Rejected, match="cannot upload files"):
        hook.upload(_file())
    assert fake.files() == []
