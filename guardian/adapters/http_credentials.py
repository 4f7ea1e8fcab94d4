"""Credentials and TLS files of an :class:`HttpClientConfig`, as ``Authorization`` values
(the query transport) and as ``requests`` auth (the remote-write client).

Both clients authenticate through :func:`authorization`, which reads the bearer token
file or the password file again for every request: Kubernetes rotates a mounted Secret
or a projected service-account token in place, and a client that read it once would
fail after the rotation.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import requests

from guardian.model.http_client import FilePath, HttpClientConfig
from guardian_common.errors import ConfigError, PermanentError
from guardian_common.files import CERTIFICATE, FileReadError, check_file, read_secret
from guardian_common.redact import Secrets, redact_url

# Header names whose values are credentials (Authorization, X-Api-Key, Cookie, ...).
_SECRET_HEADER = re.compile(r"(?i)auth|token|key|secret|password|cookie|session|signature")


class CredentialError(PermanentError):
    """A credential file cannot be read or is empty. Retrying now does not help; the
    next request reads the file again, so a fixed mount is picked up without a restart."""


def _read(path: FilePath, what: str) -> str:
    """The secret in ``path``, read the bounded way (a regular file of at most 64 KiB,
    UTF-8), so a FIFO or ``/dev/zero`` fails the request instead of hanging it."""
    try:
        return read_secret(path, what)
    except FileReadError as exc:
        reason = exc.reason.removeprefix(f"cannot read {what}: ")
        raise CredentialError(f"cannot read {what} {path}: {reason}") from None


def shown_url(config: HttpClientConfig) -> str:
    """The endpoint's URL as messages and logs may show it (no userinfo, no secret query)."""
    return redact_url(config.url)


def secrets_of(config: HttpClientConfig) -> Secrets:
    """The secret values ``config`` holds; credential files add theirs when read."""
    secrets = Secrets()
    secrets.add_url_credentials(config.url)
    auth = config.basic_auth
    if auth is not None and auth.password:
        secrets.add_basic(auth.username, auth.password)
    for name, value in config.headers.items():
        if _SECRET_HEADER.search(name):
            secrets.add(value)
            secrets.add(value.partition(" ")[2])  # "Bearer <token>": the token alone too
    return secrets


def basic(username: str, password: str) -> str:
    """An ``Authorization`` value for basic auth (latin-1 as requests sends it, else UTF-8)."""
    try:
        pair = f"{username}:{password}".encode("latin-1")
    except UnicodeEncodeError:
        pair = f"{username}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode()


def authorization(config: HttpClientConfig, secrets: Secrets) -> str | None:
    """The ``Authorization`` value ``config`` asks for, its secret files read now; every
    value read is added to ``secrets``, so no message can show it. None without auth."""
    if config.bearer_token_file is not None:
        token = _read(config.bearer_token_file, "bearer token file")
        if not token:
            raise CredentialError(f"bearer token file {config.bearer_token_file} is empty")
        secrets.add(token)
        return f"Bearer {token}"
    auth = config.basic_auth
    if auth is None:
        return None
    password = auth.password or ""
    if auth.password_file is not None:
        password = _read(auth.password_file, "password file")
    secrets.add_basic(auth.username, password)
    return basic(auth.username, password)


class FileCredentials(requests.auth.AuthBase):
    """Sets ``Authorization`` from the config, reading secret files at request time."""

    def __init__(self, config: HttpClientConfig, secrets: Secrets | None = None) -> None:
        self._config = config
        self._secrets = secrets if secrets is not None else Secrets()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        value = authorization(self._config, self._secrets)
        if value is not None:
            request.headers["Authorization"] = value
        return request


def credentials(config: HttpClientConfig, secrets: Secrets | None = None) -> FileCredentials | None:
    """The ``auth`` for ``requests``; None when the endpoint needs none."""
    if config.bearer_token_file is None and config.basic_auth is None:
        return None
    return FileCredentials(config, secrets)


def check_client_files(config: HttpClientConfig, section: str) -> None:
    """Raise ConfigError naming ``<section>.tls.<option>`` for a TLS file that is missing,
    not a regular file (a FIFO, a device) or over its 1 MiB limit, and as
    :func:`check_secret_files` does for the credential files.

    At startup, so a typo fails there and not at the first request."""
    for option, path in _tls_files(config):
        field = f"{section}.tls.{option}"
        if not Path(path).exists():
            raise ConfigError(f"no such file: {path}", field=field)
        check_file(path, CERTIFICATE, field=field)
    check_secret_files(config, section)


def check_secret_files(config: HttpClientConfig, section: str) -> None:
    """Raise FileReadError naming ``<section>.<option>`` for a bearer token or password
    file that exists but cannot be used: not a regular file, over 64 KiB, not UTF-8.
    A missing one is left to the requests, which read the files again each time."""
    auth = config.basic_auth
    files = (
        ("bearer_token_file", config.bearer_token_file, "bearer token file"),
        ("basic_auth.password_file", auth.password_file if auth else None, "password file"),
    )
    for option, path, what in files:
        if path is None or not os.path.lexists(path):
            continue
        try:
            read_secret(path, what)
        except FileReadError as exc:
            raise FileReadError(exc.reason, path=exc.path, field=f"{section}.{option}") from None


def _tls_files(config: HttpClientConfig) -> list[tuple[str, FilePath]]:
    tls = config.tls
    files = (("ca_file", tls.ca_file), ("cert_file", tls.cert_file), ("key_file", tls.key_file))
    return [(option, path) for option, path in files if path is not None]


def check_tls_now(config: HttpClientConfig) -> None:
    """Before a request through a library that opens the TLS files itself: raise
    CredentialError when one is no longer a regular file within its limit (replaced by
    a FIFO, which would block the connect). Opens each without reading."""
    for _, path in _tls_files(config):
        try:
            check_file(path, CERTIFICATE)
        except FileReadError as exc:
            raise CredentialError(f"TLS file {exc}") from None


@dataclass(frozen=True)
class Endpoint:
    """One client's server: its settings and credentials, and how its failures read
    (``prefix`` opens every message; ``rejected`` and ``unavailable`` are its errors)."""

    config: HttpClientConfig
    auth: requests.auth.AuthBase | None
    prefix: str
    rejected: type[Exception]
    unavailable: type[Exception]

    def send(
        self, session: requests.Session, method: str, url: str, **kwargs: Any
    ) -> requests.Response:
        """``method`` on ``url``, never following a redirect. Raises ``unavailable`` when
        nothing answers and ``rejected`` when a credential file cannot be read; the status
        of the answer is the caller's to judge."""
        config = self.config
        try:
            check_tls_now(config)
            return session.request(
                method,
                url,
                timeout=config.timeout,
                auth=self.auth,
                verify=config.tls.verify,
                cert=config.tls.cert,
                allow_redirects=False,
                **kwargs,
            )
        except CredentialError as exc:
            raise self.rejected(f"{self.prefix}: {exc}") from exc
        except requests.Timeout:
            raise self.unavailable(f"{self.prefix}: no answer within {config.timeout}s") from None
        except requests.RequestException as exc:
            # Not chained: requests repeats the URL's query, which may hold credentials.
            raise self.unavailable(
                f"{self.prefix}: cannot connect ({type(exc).__name__})"
            ) from None


class EndpointClient:
    """A client of one server (``config.url``): its credentials, session and
    :class:`Endpoint`; errors open with ``kind`` and the URL, without credentials."""

    kind: ClassVar[str]
    rejected: ClassVar[type[Exception]]
    unavailable: ClassVar[type[Exception]]

    def __init__(self, config: HttpClientConfig, *, session: requests.Session | None = None):
        self.config = config
        self.name = shown_url(config)  # in logs, errors and metric labels: no credentials
        self._secrets = secrets_of(config)
        self._auth = credentials(config, self._secrets)
        self._session = session if session is not None else requests.Session()
        self._endpoint = Endpoint(
            config,
            self._auth,
            f"{self.kind} {self.name}",
            rejected=self.rejected,
            unavailable=self.unavailable,
        )

    def close(self) -> None:
        self._session.close()
