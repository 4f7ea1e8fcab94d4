"""The Slack token, app token and signing secret files go through the bounded reader:
a FIFO, a device, a directory or a huge file is refused in one line naming the field,
never read (a FIFO used to block ``guardian run`` forever)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian.app.notify.secrets import SIGNING_SECRET, read_secret
from guardian_common.errors import ConfigError


def _read(path: Path) -> str:
    secret = read_secret(SIGNING_SECRET, "UNSET", str(path), {})
    return secret.reveal() if hasattr(secret, "reveal") else str(secret)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "not a regular file (a FIFO)"),
        (lambda p: p.mkdir(), "not a regular file (a directory)"),
        (lambda p: p.write_bytes(b"x" * (1 << 20)), "too large"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "is not UTF-8 text"),
        (lambda p: p.write_text("\n"), "file is empty"),
    ],
    ids=["fifo", "directory", "1MiB", "non-utf8", "empty"],
)
def test_a_hostile_secret_file_is_one_line(tmp_path: Path, make: object, said: str) -> None:
    path = tmp_path / "secret"
    make(path)  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        _read(path)
    text = str(info.value)
    assert said in text
    assert "slack.interactivity.signing_secret_file" in text
    assert "\n" not in text


def test_a_good_secret_file_is_read_without_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("s3cr3t\n", encoding="utf-8")
    assert "s3cr3t" in _read(path)
