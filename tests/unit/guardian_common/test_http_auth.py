"""The authenticator: an unknown user costs the same bcrypt as a wrong password, failed
logins are limited per client (429 with Retry-After, no bcrypt), a header that passed is
remembered, and a bearer token file is re-read when it changes."""

from __future__ import annotations

import base64
import os
import threading
from pathlib import Path

import bcrypt
import pytest

from guardian_common import http_auth
from guardian_common.errors import ConfigError
from guardian_common.http_auth import Authenticator, FailureLimiter, client_key, load_users

HASH_COST = 5
USERS = {"prom": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=HASH_COST))}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def bcrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The hashes bcrypt.checkpw was asked to check against, in order."""
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def counting(password: bytes, hashed: bytes) -> bool:
        calls.append(hashed)
        return real(password, hashed)

    monkeypatch.setattr(http_auth.bcrypt, "checkpw", counting)
    return calls


def test_no_users_and_no_token_allows_everything() -> None:
    auth = Authenticator()
    assert not auth.enabled
    assert auth.check(None, "10.0.0.1").allowed


def test_unknown_user_runs_the_same_bcrypt_as_a_wrong_password(bcrypt_calls: list[bytes]) -> None:
    auth = Authenticator(USERS, failures_per_minute=100)
    assert not auth.check(basic("prom", "wrong"), "10.0.0.1").allowed
    assert not auth.check(basic("nobody", "s3cret"), "10.0.0.1").allowed
    assert len(bcrypt_calls) == 2
    wrong_password, unknown_user = bcrypt_calls
    assert wrong_password == USERS["prom"]
    assert unknown_user != USERS["prom"]
    assert unknown_user[:7] == f"$2b${HASH_COST:02d}$".encode()  # the users' cost


def test_failures_are_limited_per_client_without_bcrypt(bcrypt_calls: list[bytes]) -> None:
    clock = Clock()
    auth = Authenticator(USERS, failures_per_minute=3, monotonic=clock)
    good, bad = basic("prom", "s3cret"), basic("prom", "guess")
    assert auth.check(good, "10.0.0.9").allowed  # passed once: remembered
    for _ in range(3):
        verdict = auth.check(bad, "10.0.0.1")
        assert (verdict.allowed, verdict.retry_after) == (False, None)
    calls = len(bcrypt_calls)
    limited = auth.check(bad, "10.0.0.1")
    assert (limited.allowed, limited.retry_after) == (False, 20)  # one try per 20 s
    assert not auth.check(basic("prom", "another guess"), "10.0.0.1").allowed
    assert len(bcrypt_calls) == calls  # no bcrypt while limited
    assert auth.check(good, "10.0.0.1").allowed  # a known-good header still works
    assert auth.check(bad, "10.0.0.2").retry_after is None  # other clients are not limited
    clock.now += 20
    assert auth.check(bad, "10.0.0.1").retry_after is None  # one more try after 20 s
    assert auth.check(bad, "10.0.0.1").retry_after == 20


def test_requests_without_or_with_malformed_credentials_are_not_failures() -> None:
    auth = Authenticator(USERS, failures_per_minute=1)
    for header in (None, "", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()):
        for _ in range(3):
            assert auth.check(header, "10.0.0.1") == http_auth.DENIED
    assert auth.check(basic("prom", "s3cret"), "10.0.0.1").allowed


def test_an_ipv6_client_is_counted_by_its_64() -> None:
    assert client_key("2001:db8:1:2:aaaa::1") == client_key("2001:db8:1:2:bbbb::7")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("::ffff:10.1.2.3") == "10.1.2.3"
    assert client_key("10.1.2.3") == "10.1.2.3"


def test_limiter_memory_is_bounded() -> None:
    clock = Clock()
    limiter = FailureLimiter(5, monotonic=clock, max_clients=100)
    for n in range(1000):
        assert limiter.acquire(f"10.0.{n // 256}.{n % 256}") is None
    assert len(limiter._buckets) <= 100
    newest = "10.0.3.231"
    assert limiter._buckets[newest][0] == pytest.approx(4.0)  # the newest still count
    limiter.refund(newest)
    assert limiter._buckets[newest][0] == pytest.approx(5.0)


def test_concurrent_requests_with_one_new_header_share_one_bcrypt(
    bcrypt_calls: list[bytes],
) -> None:
    auth = Authenticator(USERS)
    start = threading.Barrier(8)
    verdicts: list[bool] = []

    def scrape() -> None:
        start.wait()
        verdicts.append(auth.check(basic("prom", "s3cret"), "10.0.0.1").allowed)

    threads = [threading.Thread(target=scrape) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert verdicts == [True] * 8
    assert len(bcrypt_calls) == 1


def test_concurrent_guesses_run_no_more_bcrypt_than_the_limit(bcrypt_calls: list[bytes]) -> None:
    auth = Authenticator(USERS, failures_per_minute=3)
    start = threading.Barrier(20)
    verdicts: list[int | None] = []

    def guess(n: int) -> None:
        start.wait()
        verdicts.append(auth.check(basic("prom", f"guess-{n}"), "10.0.0.1").retry_after)

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(bcrypt_calls) == 3
    assert sorted(v or 0 for v in verdicts) == [0] * 3 + [20] * 17


def test_bearer_token_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    auth = Authenticator(bearer_token_file=token, failures_per_minute=100)
    assert auth.challenges == ('Bearer realm="gpu-guardian"',)
    assert auth.check("Bearer first-token", "10.0.0.1").allowed
    assert not auth.check("Bearer wrong", "10.0.0.1").allowed
    assert not auth.check(basic("prom", "s3cret"), "10.0.0.1").allowed  # no users file
    token.write_text("second-token-longer\n")
    assert auth.check("Bearer second-token-longer", "10.0.0.1").allowed
    assert not auth.check("Bearer first-token", "10.0.0.1").allowed  # rotated out
    token.unlink()
    assert auth.check("Bearer second-token-longer", "10.0.0.1").allowed  # the last one read


def test_an_empty_or_missing_token_file_fails_at_start(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="empty"):
        Authenticator(bearer_token_file=empty)
    with pytest.raises(ConfigError, match="cannot read"):
        Authenticator(bearer_token_file=tmp_path / "missing")


def test_a_token_file_that_turns_into_a_fifo_keeps_the_last_token(tmp_path: Path) -> None:
    """Bounded and non-blocking: a FIFO at start is one line; swapped in later, the
    request neither blocks nor loses the token read last."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"fifo: not a regular file \(a FIFO\)"):
        Authenticator(bearer_token_file=fifo)
    token = tmp_path / "token"
    token.write_text("tok-123456\n")
    auth = Authenticator(bearer_token_file=token)
    token.unlink()
    token.symlink_to("/dev/zero")
    assert auth.check("Bearer tok-123456", "10.0.0.1").allowed


def test_users_and_token_together(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("tok-123456")
    auth = Authenticator(USERS, bearer_token_file=token)
    assert len(auth.challenges) == 2
    assert auth.check("Bearer tok-123456", "10.0.0.1").allowed
    assert auth.check(basic("prom", "s3cret"), "10.0.0.1").allowed


def test_users_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "users.yaml"
    path.write_bytes(b"\xff\xfe binary")
    with pytest.raises(ConfigError, match=r"users\.yaml:1: not UTF-8"):
        load_users(path)
    path.write_text("basic_auth_users:\n  prom: '$2b$xx$nope'\n")
    with pytest.raises(ConfigError, match=r"basic_auth_users\.prom: not a bcrypt hash"):
        load_users(path)


def test_an_over_long_password_is_refused_not_truncated() -> None:
    long = "x" * 72
    users = {"u": bcrypt.hashpw(long.encode(), bcrypt.gensalt(rounds=4))}
    auth = Authenticator(users)
    assert auth.check(basic("u", long), "10.0.0.1").allowed
    assert not auth.check(basic("u", long + "y"), "10.0.0.1").allowed
