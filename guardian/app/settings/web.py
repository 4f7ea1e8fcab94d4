"""The ``web:`` section: TLS, authentication and limits of the controller's HTTP endpoint
(``listen_address``), with the exporter's option names and users file format."""

from __future__ import annotations

from pydantic import Field, model_validator

from guardian_common.config_types import ConfigPath, Duration, Int, StrictModel


class WebSettings(StrictModel):
    """/api/v1/alerts and /metrics need credentials when a users file or a token file is
    set; /healthz and /readyz never do (kubelet probes send none)."""

    tls_cert_file: ConfigPath | None = None
    """Serve HTTPS (TLS 1.2 or later) with this PEM certificate; needs ``tls_key_file``.
    Read again when it changes, so a renewed Secret needs no restart. Unset: plain HTTP."""
    tls_key_file: ConfigPath | None = None
    """The certificate's private key (PEM)."""
    basic_auth_users_file: ConfigPath | None = None
    """YAML ``basic_auth_users: {user: bcrypt hash}``, the exporter's (and Prometheus
    exporter-toolkit's) format. Unset: no basic auth."""
    bearer_token_file: ConfigPath | None = None
    """File holding the token clients send as ``Authorization: Bearer``; read again when it
    changes. Unset: no bearer auth. With both set, either credential is accepted."""
    auth_failures_per_minute: Int = Field(default=10, ge=1)
    """Failed logins one client (address, or IPv6 /64) may make per minute, in a burst;
    beyond it 429 with Retry-After. 10: a typo is noticed, guessing is slowed to a crawl."""
    max_connections: Int = Field(default=64, ge=1, le=10_000)
    """Requests served at once, one thread each, taken only once a request is complete
    (an idle or trickling connection holds no thread; the probes have their own). 64:
    Prometheus replicas and people with room to spare, while a flood cannot exhaust the
    controller's memory (Prometheus's own default is 512)."""
    request_timeout: Duration = 10.0
    """Seconds one connection may take from accept to its last byte, however slowly the
    client sends. 10s: Prometheus's scrape timeout; every answer here takes milliseconds."""

    @model_validator(mode="after")
    def _pair(self) -> WebSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file must be given together")
        return self
