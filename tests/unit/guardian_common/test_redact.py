"""Redaction: URLs lose their userinfo and secret query values, known secrets vanish from
any text in every form they travel in, and the logging filter covers tracebacks."""

from __future__ import annotations

import base64
import io
import json
import logging

import pytest

from guardian_common.logs import configure_logging
from guardian_common.redact import REDACTED, RedactFilter, Secret, Secrets, redact_url, scrub


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://prom:9090", "http://prom:9090"),
        ("http://user:pa%40ss@prom:9090/x", f"http://{REDACTED}@prom:9090/x"),
        ("https://token@host/api?query=up", f"https://{REDACTED}@host/api?query=up"),
        ("http://u:p@ss@host/", f"http://{REDACTED}@host/"),  # a raw @ in the password
        ("https://h/w?api_key=k1&tenant=a", f"https://h/w?api_key={REDACTED}&tenant=a"),
        ("https://h/w?a=1&TOKEN=k1", f"https://h/w?a=1&TOKEN={REDACTED}"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_an_unparsable_url_is_still_scrubbed() -> None:
    assert redact_url("http://u:secret@[::1") == f"http://{REDACTED}@[::1"


def test_scrub_finds_urls_inside_text() -> None:
    text = "GET 'http://admin:hunter22@10.0.0.1:9090/api' failed; see https://x.io/?sig=abc"
    out = scrub(text)
    assert "hunter22" not in out
    assert "admin" not in out
    assert "abc" not in out
    assert "10.0.0.1:9090/api" in out
    assert (
        scrub("an address user@example.com, no scheme") == "an address user@example.com, no scheme"
    )


def test_secrets_in_every_form() -> None:
    secrets = Secrets("p@ss word!", None, "abc")  # "abc" is too short to scrub in free text
    secrets.add_basic("prom", "s3cr3t-pw")
    header = base64.b64encode(b"prom:s3cr3t-pw").decode()
    text = f"p@ss word! p%40ss%20word%21 s3cr3t-pw Basic {header} abc"
    assert secrets.scrub(text) == f"{REDACTED} {REDACTED} {REDACTED} Basic {REDACTED} abc"


def test_a_webhook_url_is_secret_also_as_a_path() -> None:
    webhook = Secret("https://hooks.slack.com/services/T0/B0/abcdef123")
    assert "abcdef123" not in repr(webhook) + str(webhook)
    text = webhook.redact("POST /services/T0/B0/abcdef123 -> 404 for " + webhook.reveal())
    assert "abcdef123" not in text


def test_rotated_values_are_remembered_up_to_a_bound() -> None:
    secrets = Secrets()
    for n in range(100):
        secrets.add(f"token-{n:04d}")
    assert secrets.scrub("token-0099 token-0090") == f"{REDACTED} {REDACTED}"
    assert secrets.scrub("token-0000") == "token-0000"  # long rotated out


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_the_process_log_handler_scrubs_messages_and_tracebacks(fmt: str) -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    configure_logging("DEBUG", fmt, stream)
    log = logging.getLogger("some.library")
    try:
        log.debug("connecting to %s", "http://user:topsecret1@host/")
        try:
            raise ValueError("bad URL http://user:topsecret2@host/")
        except ValueError:
            log.exception("failed")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    out = stream.getvalue()
    assert "topsecret" not in out
    assert out.count(REDACTED) >= 2  # the message, the exception (and its source line)
    if fmt == "json":
        assert all(json.loads(line) for line in out.splitlines() if line.startswith("{"))


def test_filter_with_known_secrets() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token is %s", ("xoxb-123",), None)
    assert RedactFilter(Secrets("xoxb-123")).filter(record)
    assert record.getMessage() == f"token is {REDACTED}"


def test_credentials_of_an_address_leave_the_address_readable() -> None:
    secrets = Secrets()
    secrets.add_url_credentials("https://bob:pw-1234@thanos:9090/prefix?api_key=key-5678&x=1")
    header = base64.b64encode(b"bob:pw-1234").decode()
    text = f"GET /prefix/api/v1/query failed: pw-1234 key-5678 {header}"
    assert secrets.scrub(text) == (
        f"GET /prefix/api/v1/query failed: {REDACTED} {REDACTED} {REDACTED}"
    )
