"""How to reach one HTTP endpoint: the one client config both the query and the remote-write
clients take, built once from the settings (or directly, by tests and ``guardian test``).

Secrets are given as file paths where possible; the clients read them again for every
request (see :mod:`guardian.adapters.http_credentials`), so a rotated Secret is picked up.
Validation is the settings' job; this is plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

FilePath = str | Path


@dataclass(frozen=True)
class BasicAuthConfig:
    """HTTP basic auth: ``password`` inline, or ``password_file`` read per request."""

    username: str
    password: str | None = field(default=None, repr=False)
    password_file: FilePath | None = None


@dataclass(frozen=True)
class TlsConfig:
    """Server verification (``ca_file``; system CAs when unset) and a client certificate."""

    ca_file: FilePath | None = None
    cert_file: FilePath | None = None
    key_file: FilePath | None = None  # None: the key is in cert_file
    insecure_skip_verify: bool = False

    @property
    def verify(self) -> bool | str:
        """``requests``' ``verify``: False, a CA bundle path, or True (system CAs)."""
        if self.insecure_skip_verify:
            return False
        return str(self.ca_file) if self.ca_file is not None else True

    @property
    def cert(self) -> str | tuple[str, str] | None:
        """``requests``' ``cert``: the certificate, with its key file when separate."""
        if self.cert_file is None:
            return None
        if self.key_file is None:
            return str(self.cert_file)
        return (str(self.cert_file), str(self.key_file))


@dataclass(frozen=True)
class HttpClientConfig:
    """One endpoint: URL, timeout, auth (bearer token file or basic), TLS, extra headers."""

    url: str
    timeout: float = 30.0  # seconds per request
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    bearer_token_file: FilePath | None = None
    basic_auth: BasicAuthConfig | None = None
    tls: TlsConfig = TlsConfig()
