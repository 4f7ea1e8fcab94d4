"""The ``prometheus:`` and ``remote_write:`` sections: one HTTP-client setting, validated once
here and turned into the one :class:`HttpClientConfig` both clients take."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationInfo, field_validator, model_validator

from guardian.model.http_client import BasicAuthConfig, HttpClientConfig, TlsConfig
from guardian.model.labels import is_valid_label_name
from guardian_common.config_types import Bool, ConfigPath, Duration, Int, StrictModel
from guardian_common.redact import redact_url

# Headers the remote-write protocol or the auth options own; Prometheus refuses them too.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "connection",
        "content-encoding",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "retry-after",
        "transfer-encoding",
        "user-agent",
        "www-authenticate",
        "x-prometheus-remote-write-version",
    }
)


class BasicAuth(StrictModel):
    username: str
    """The user name, sent as written."""
    password: str | None = Field(default=None, repr=False)
    """Inline password. Prefer ``password_file``: a config file is rarely a secret."""
    password_file: ConfigPath | None = None
    """File whose content (whitespace trimmed) is the password; read for every request,
    so a rotated Secret is picked up. Relative to the config file."""

    @model_validator(mode="after")
    def _one_password(self) -> BasicAuth:
        if self.password is not None and self.password_file is not None:
            raise ValueError("set password or password_file, not both")
        return self

    def config(self) -> BasicAuthConfig:
        return BasicAuthConfig(self.username, self.password, self.password_file)


class TLSSettings(StrictModel):
    ca_file: ConfigPath | None = None
    """CA bundle that verifies the server. Unset: the system's CAs, as for any HTTPS URL."""
    cert_file: ConfigPath | None = None
    """Client certificate (PEM) for mutual TLS; may hold the key too."""
    key_file: ConfigPath | None = None
    """The client certificate's private key, when not in ``cert_file``."""
    insecure_skip_verify: Bool = False
    """Skip server verification. Off: an unverified server could forge query answers."""

    @model_validator(mode="after")
    def _pair(self) -> TLSSettings:
        if self.key_file and not self.cert_file:
            raise ValueError("key_file needs cert_file")
        return self

    def config(self) -> TlsConfig:
        return TlsConfig(self.ca_file, self.cert_file, self.key_file, self.insecure_skip_verify)


class HttpClientSettings(StrictModel):
    url: str
    """Base URL, ``http://`` or ``https://`` with a host."""
    timeout: Duration = 30.0
    """Seconds one request may take. 30s: half the default evaluation interval, so a
    hung query fails while the group can still evaluate on time."""
    bearer_token_file: ConfigPath | None = None
    """File holding a bearer token, read for every request (projected service-account
    tokens rotate in place). Not together with ``basic_auth``."""
    basic_auth: BasicAuth | None = None
    """User name and password (or password file)."""
    tls: TLSSettings = TLSSettings()
    """TLS options; the defaults verify the server with the system's CAs."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra headers sent with every request, e.g. ``X-Scope-OrgID`` for a tenant."""

    @field_validator("url")
    @classmethod
    def _url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            shown = redact_url(url)
            raise ValueError(f"url must start with http:// or https:// and a host, got {shown!r}")
        return url

    @field_validator("basic_auth")
    @classmethod
    def _one_auth(cls, auth: BasicAuth | None, info: ValidationInfo) -> BasicAuth | None:
        if auth is not None and info.data.get("bearer_token_file"):
            raise ValueError("set bearer_token_file or basic_auth, not both")
        return auth

    def client_config(self) -> HttpClientConfig:
        """The client config both HTTP clients take (paths as resolved here)."""
        return HttpClientConfig(
            url=self.url,
            timeout=self.timeout,
            headers=dict(self.headers),
            bearer_token_file=self.bearer_token_file,
            basic_auth=self.basic_auth.config() if self.basic_auth else None,
            tls=self.tls.config(),
        )


class PrometheusSettings(HttpClientSettings):
    thanos: Bool = False
    """Thanos Query: ask for ``partial_response=false`` and ``dedup=true``, and treat an
    answer with warnings as partial. Off: plain Prometheus has no such parameters."""
    method: Literal["GET", "POST"] = "GET"
    """HTTP method of queries. GET: what every Prometheus-compatible API accepts; POST
    for expressions too long for a proxy's URL limit."""
    concurrent_queries: Int = Field(default=4, ge=1, le=64)
    """Queries one group evaluation keeps in flight at most: its rules at once, and the
    ``query`` calls of a rule's annotations (one per alert). 1: one after another, as
    Prometheus 2.42 evaluates a group. Decisions are the same either way."""
    query_shards: Int = Field(default=1, ge=1, le=16)
    """Parts a rule's query is split into, asked at once within ``concurrent_queries``,
    where its expression works per value of one of ``shard_labels``. Same answer either
    way (docs/engine.md, "Queries in shards"). 1: every query whole. Off by default: a
    part costs more than its share of Prometheus's CPU, so 2 parts help a group that one
    dear rule dominates only where Prometheus has cores to spare (bench/README.md)."""
    shard_labels: list[str] = Field(
        default=["uuid", "UUID", "node", "Hostname", "pod", "instance"], max_length=16
    )
    """Labels a query may be split on, the first that every step of its expression groups
    and matches by. Defaults: the GPU and node labels of both exporters, then pods."""

    @field_validator("shard_labels")
    @classmethod
    def _label_names(cls, names: list[str]) -> list[str]:
        bad = [n for n in names if not is_valid_label_name(n) or n == "__name__"]
        if bad:
            raise ValueError(f"not label names: {', '.join(map(repr, bad))}")
        return names


class RemoteWriteTLSSettings(TLSSettings):
    @field_validator("insecure_skip_verify")
    @classmethod
    def _verify(cls, skip: bool) -> bool:
        if skip:
            raise ValueError("not supported for remote write")
        return skip

    @model_validator(mode="after")
    def _both(self) -> RemoteWriteTLSSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file must be given together")
        return self


class RemoteWriteSettings(HttpClientSettings):
    timeout: Duration = 10.0
    """Seconds one write may take. 10s: a write runs after every group evaluation, and a
    slow receiver must not hold the next one back for long."""
    tls: RemoteWriteTLSSettings = RemoteWriteTLSSettings()
    """TLS options; a client certificate needs both ``cert_file`` and ``key_file``."""

    @field_validator("headers")
    @classmethod
    def _reserved(cls, headers: dict[str, str]) -> dict[str, str]:
        reserved = sorted(name for name in headers if name.lower() in _RESERVED_HEADERS)
        if reserved:
            raise ValueError(f"{', '.join(reserved)} cannot be set here; the client sets it")
        return headers
