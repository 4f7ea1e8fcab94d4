"""Who may call an HTTP endpoint of either program: basic auth against a bcrypt users file
(the Prometheus exporter-toolkit's ``basic_auth_users`` key, so one file serves both), or
a bearer token kept in a file.

- Constant time: an unknown user costs the same bcrypt as a wrong password (a dummy hash
  of the users' highest cost), so the answer time does not tell which user names exist.
- Failed attempts are limited per client (an IPv6 client by its /64): ``failures_per_minute``
  in a burst, refilled at that rate; beyond it the answer is 429 with ``Retry-After``, and
  no bcrypt runs. A try is counted before its check, so concurrent guesses cannot run
  more bcrypt than that either. A header that already succeeded is remembered (by its
  SHA-256), so a scraper behind the same address as an attacker keeps working and a
  scrape costs no bcrypt; concurrent requests with the same new header share one check.
- The token file is read again when it changes, so a rotated Secret is picked up.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import logging
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import bcrypt

from guardian_common.errors import ConfigError
from guardian_common.files import read_secret, read_text
from guardian_common.yamldoc import parse_yaml

logger = logging.getLogger(__name__)

USERS_KEY = "basic_auth_users"
_BCRYPT_PREFIXES = ("$2a$", "$2b$", "$2y$")
_BCRYPT_MAX_BYTES = 72  # bcrypt ignores the rest; longer passwords are refused
_REMEMBERED_HEADERS = 256
_MAX_CLIENTS = 10_000


def load_users(path: Path) -> dict[str, bytes]:
    """``basic_auth_users: {user: bcrypt hash}`` from ``path``, read the bounded strict way
    every input file is; ConfigError naming the file, the line and the field otherwise."""
    source = str(path)
    doc = parse_yaml(read_text(path, what="users file"), source)
    data = doc.data
    if not isinstance(data, dict) or set(data) != {USERS_KEY}:
        raise ConfigError(
            f"expected one key, {USERS_KEY}: {{user: bcrypt hash}}", path=source, line=1
        )
    users = data[USERS_KEY]
    if not isinstance(users, dict) or not users:
        raise doc.error("must map user names to bcrypt hashes", (USERS_KEY,))
    out: dict[str, bytes] = {}
    for name, hashed in users.items():
        where = (USERS_KEY, name)
        if not isinstance(hashed, str):
            raise doc.error("the hash must be a string", where, f"{USERS_KEY}.{name}")
        if not hashed.startswith(_BCRYPT_PREFIXES) or not hashed[4:6].isdigit():
            raise doc.error("not a bcrypt hash ($2b$...)", where, f"{USERS_KEY}.{name}")
        out[str(name)] = hashed.encode()
    return out


def check_password(hashed: bytes, password: str) -> bool:
    """bcrypt's verdict; False for a malformed hash or an over-long password."""
    secret = password.encode()
    try:
        return len(secret) <= _BCRYPT_MAX_BYTES and bcrypt.checkpw(secret, hashed)
    except ValueError:
        return False


def client_key(address: str) -> str:
    """The unit failures are counted in: an IPv4 address, or an IPv6 client's /64 (one
    host usually holds the whole /64)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class FailureLimiter:
    """A token bucket per client: ``per_minute`` failures at once, refilled at that rate.

    Memory is bounded: beyond ``max_clients`` the clients whose bucket is full again are
    forgotten first, then the least recently seen.
    """

    def __init__(
        self,
        per_minute: int,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        max_clients: int = _MAX_CLIENTS,
    ) -> None:
        if per_minute < 1:
            raise ValueError("per_minute must be >= 1")
        self._capacity = float(per_minute)
        self._rate = per_minute / 60.0  # tokens per second
        self._monotonic = monotonic
        self._max_clients = max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, at
        self._lock = threading.Lock()

    def acquire(self, client: str) -> int | None:
        """Take one try for ``client``: None when it may try now (the try is counted as a
        failure until :meth:`refund`), else whole seconds until it may. Counting before
        the check bounds the bcrypt work of a burst of concurrent guesses too."""
        with self._lock:
            now = self._monotonic()
            tokens = self._tokens(client, now)
            if tokens < 1.0:
                return max(1, math.ceil((1.0 - tokens) / self._rate))
            self._buckets[client] = (tokens - 1.0, now)
            self._buckets.move_to_end(client)
            if len(self._buckets) > self._max_clients:
                self._forget(now)
            return None

    def refund(self, client: str) -> None:
        """The try succeeded: it was no failure."""
        with self._lock:
            now = self._monotonic()
            if client in self._buckets:
                self._buckets[client] = (self._tokens(client, now) + 1.0, now)

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self._capacity, now))
        return min(self._capacity, tokens + (now - at) * self._rate)

    def _forget(self, now: float) -> None:
        for client in [c for c in self._buckets if self._tokens(c, now) >= self._capacity]:
            del self._buckets[client]
        while len(self._buckets) > self._max_clients:
            self._buckets.popitem(last=False)


@dataclass(frozen=True)
class AuthResult:
    """``allowed``; otherwise 401, or 429 when ``retry_after`` (seconds) is set."""

    allowed: bool
    retry_after: int | None = None


ALLOWED = AuthResult(True)
DENIED = AuthResult(False)


class Authenticator:
    """Checks an ``Authorization`` header; thread-safe. With neither users nor a token
    file every request is allowed."""

    def __init__(
        self,
        users: Mapping[str, bytes] | None = None,
        *,
        bearer_token_file: Path | None = None,
        failures_per_minute: int = 10,
        realm: str = "gpu-guardian",
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._users = dict(users or {})
        self._token = _TokenFile(bearer_token_file) if bearer_token_file is not None else None
        self._limiter = FailureLimiter(failures_per_minute, monotonic=monotonic)
        self._passed: OrderedDict[bytes, None] = OrderedDict()
        self._running: dict[bytes, _Check] = {}
        self._lock = threading.Lock()
        self._dummy = _dummy_hash(self._users)
        challenges = []
        if self._users:
            challenges.append(f'Basic realm="{realm}"')
        if self._token is not None:
            challenges.append(f'Bearer realm="{realm}"')
        self.challenges: tuple[str, ...] = tuple(challenges)

    @property
    def enabled(self) -> bool:
        return bool(self.challenges)

    def check(self, header: str | None, client: str) -> AuthResult:
        """The verdict on ``header`` from the client at address ``client``."""
        if not self.enabled:
            return ALLOWED
        credential = self._credential(header or "")
        if credential is None:
            return DENIED  # none, or not even well-formed: nothing to try, no failure
        digest = hashlib.sha256(credential.header.encode("utf-8", "replace")).digest()
        with self._lock:
            if digest in self._passed:
                self._passed.move_to_end(digest)
                return ALLOWED
            running = self._running.get(digest)
            if running is None:
                mine = self._running[digest] = _Check()
        if running is not None:  # the same header is being checked now: share its verdict
            running.done.wait()
            return running.verdict
        try:
            mine.verdict = self._try(credential, digest, client_key(client))
            return mine.verdict
        finally:
            with self._lock:
                del self._running[digest]
            mine.done.set()

    def _try(self, credential: _Credential, digest: bytes, key: str) -> AuthResult:
        wait = self._limiter.acquire(key)
        if wait is not None:
            return AuthResult(False, retry_after=wait)
        if not credential.verify():
            return DENIED
        self._limiter.refund(key)
        if credential.cacheable:  # a token rotates, so it is compared every time
            with self._lock:
                self._passed[digest] = None
                while len(self._passed) > _REMEMBERED_HEADERS:
                    self._passed.popitem(last=False)
        return ALLOWED

    def _credential(self, header: str) -> _Credential | None:
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() == "bearer" and self._token is not None and value:
            token = self._token
            return _Credential(header, lambda: token.matches(value), cacheable=False)
        if scheme.lower() != "basic" or not self._users:
            return None
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        user, sep, password = decoded.partition(":")
        if not sep:
            return None
        users, dummy = self._users, self._dummy

        def verify() -> bool:
            hashed = users.get(user, dummy)  # the same bcrypt either way
            return check_password(hashed, password) and user in users

        return _Credential(header, verify, cacheable=True)


class _Check:
    """One check in progress, which requests with the same header wait for."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.verdict = DENIED  # until the check says otherwise (or fails)


@dataclass(frozen=True)
class _Credential:
    header: str
    verify: Callable[[], bool]
    cacheable: bool


def _dummy_hash(users: Mapping[str, bytes]) -> bytes:
    """A hash of a random password at the users' highest cost."""
    if not users:
        return b""
    cost = max(int(h[4:6]) for h in users.values())
    return bcrypt.hashpw(os.urandom(16).hex().encode(), bcrypt.gensalt(rounds=cost))


class _TokenFile:
    """The expected bearer token, read again whenever the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._stamp: tuple[int, int] | None = None
        self._token = b""
        self._lock = threading.Lock()
        self._read()  # a missing or empty file fails at start
        if not self._token:
            raise ConfigError("the bearer token file is empty", path=str(path))

    def matches(self, presented: str) -> bool:
        with self._lock:
            try:
                self._read()
            except ConfigError as exc:
                logger.warning("bearer token: keeping the last one read: %s", exc)
            expected = self._token
        return bool(expected) and hmac.compare_digest(presented.encode(), expected)

    def _read(self) -> None:
        try:
            stat = self._path.stat()
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror}", path=str(self._path)) from None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            # Bounded, regular files only: never blocks on a FIFO or reads /dev/zero.
            self._token = read_secret(self._path, "bearer token file").encode()
            self._stamp = stamp
