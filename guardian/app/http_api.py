"""The engine's HTTP endpoint: ``/api/v1/alerts`` (Prometheus's shape), ``/api/v1/status``
(``guardian status`` as JSON), ``/graph`` (where an alert's generatorURL points: the rules
with that expression and their alerts), ``/healthz``, ``/readyz`` and ``/metrics``.

One port for all. The API and /metrics need credentials when ``web:`` sets a users
or token file (Prometheus scrapes with its ServiceMonitor's basic auth or bearer token);
the probes never do. Requests are read whole before a thread takes them, connections
are capped, each has one deadline, the probes have threads of their own, TLS is optional
(:mod:`guardian_common.http_server`); failed logins are limited per client
(:mod:`guardian_common.http_auth`). The manifests bind the pod IP and a NetworkPolicy
admits only Prometheus and the namespace's own pods; see docs/deploy.md.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from guardian.adapters.kube.rest import NotFound
from guardian.app.alertmanager.output import evaluated_expr
from guardian.app.rules.runtime import ActiveAlert, RuleEngine
from guardian.app.settings.web import WebSettings
from guardian.model.times import parse_rfc3339, rfc3339
from guardian_common.errors import GuardianError, PermanentError, TransientError
from guardian_common.http_auth import Authenticator, load_users
from guardian_common.http_server import LimitedHTTPServer, ServerLimits, ServerThread, ServerTls

logger = logging.getLogger(__name__)

StatusSource = Callable[[], dict[str, Any]]
# ``guardian explain``: the workload (NAMESPACE/KIND/NAME) and a past time, or None: now.
ExplainSource = Callable[[str, float | None], dict[str, Any]]


def format_api_value(value: float) -> str:
    """Go's strconv.FormatFloat(v, 'e', -1, 64), as /api/v1/alerts prints ``value``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0e+00" if math.copysign(1, value) < 0 else "0e+00"
    text = format(Decimal(repr(value)).normalize(), "e")
    mantissa, exponent = text.split("e")
    sign = exponent[0] if exponent[0] in "+-" else "+"
    digits = exponent.lstrip("+-")
    return f"{mantissa}e{sign}{digits.zfill(2)}"


def alert_json(item: ActiveAlert) -> dict[str, Any]:
    alert = item.alert
    out: dict[str, Any] = {
        "labels": alert.labels.to_dict(),
        "annotations": alert.annotations.to_dict(),
        "state": alert.state.value,
        "activeAt": rfc3339(alert.active_at, "ms"),
        "value": format_api_value(alert.value),
    }
    if alert.keep_firing_since is not None:
        out["keepFiringSince"] = rfc3339(alert.keep_firing_since, "ms")
    return out


def graph_json(engine: RuleEngine, query: str) -> dict[str, Any]:
    """``/graph?g0.expr=...``: the rules evaluating that expression, with their alerts."""
    expr = (parse_qs(query).get("g0.expr") or [""])[0]
    active = engine.active_alerts()
    rules = [
        {
            "group": group.name,
            "rule": rule.rule.name,
            "labels": dict(rule.rule.labels),
            "alerts": [
                alert_json(a) for a in active if a.group == group.name and a.rule == rule.rule.name
            ],
        }
        for group in engine.groups
        for _key, rule in group.rules
        if evaluated_expr(rule) == expr
    ]
    return {"status": "success", "data": {"expr": expr, "rules": rules}}


@dataclass(frozen=True)
class WebGuard:
    """Who may call the endpoint and how much it serves at once."""

    auth: Authenticator = field(default_factory=Authenticator)
    tls: ServerTls | None = None
    limits: ServerLimits = field(default_factory=ServerLimits)


def web_guard(web: WebSettings) -> WebGuard:
    """The guard ``web:`` asks for; ConfigError naming the field for a bad file."""
    users = web.basic_auth_users_file
    token = web.bearer_token_file
    auth = Authenticator(
        load_users(Path(users)) if users is not None else None,
        bearer_token_file=Path(token) if token is not None else None,
        failures_per_minute=web.auth_failures_per_minute,
        realm="gpu-guardian",
    )
    tls = None
    if web.tls_cert_file is not None and web.tls_key_file is not None:
        tls = ServerTls(web.tls_cert_file, web.tls_key_file, field="web.tls_cert_file")
    limits = ServerLimits(max_connections=web.max_connections, request_timeout=web.request_timeout)
    return WebGuard(auth, tls, limits)


class EngineHTTPServer(ServerThread):
    thread_name = "guardian-http"

    def __init__(
        self,
        engine: RuleEngine,
        host: str,
        port: int,
        guard: WebGuard | None = None,
        *,
        status: StatusSource | None = None,
        explain: ExplainSource | None = None,
    ) -> None:
        self.engine = engine
        self.guard = guard if guard is not None else WebGuard()
        self.status = status
        self.explain = explain
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                logger.debug("http: %s", format % args)

            def do_GET(self) -> None:
                server_self._handle(self)

        self._server = LimitedHTTPServer(
            (host, port), Handler, limits=self.guard.limits, tls=self.guard.tls
        )

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def scheme(self) -> str:
        return "https" if self.guard.tls is not None else "http"

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        path, _, query = handler.path.partition("?")
        try:
            if path == "/healthz":
                self._reply(handler, 200, b"ok\n", "text/plain")
            elif path == "/readyz":
                ready = self.engine.ready()
                text = b"ready\n" if ready else b"waiting for the first evaluation of every group\n"
                self._reply(handler, 200 if ready else 503, text, "text/plain")
            elif self._authorized(handler):
                self._route(handler, path, query)
        except Exception:
            logger.exception("http: %s failed", path)
            self._reply(handler, 500, b"internal error\n", "text/plain")

    def _authorized(self, handler: BaseHTTPRequestHandler) -> bool:
        auth = self.guard.auth
        verdict = auth.check(handler.headers.get("Authorization"), handler.client_address[0])
        if verdict.allowed:
            return True
        if verdict.retry_after is not None:
            headers = [("Retry-After", str(verdict.retry_after))]
            self._reply(handler, 429, b"too many failed logins\n", "text/plain", headers)
        else:
            headers = [("WWW-Authenticate", c) for c in auth.challenges]
            self._reply(handler, 401, b"unauthorized\n", "text/plain", headers)
        return False

    def _explain(self, handler: BaseHTTPRequestHandler, explain: ExplainSource, query: str) -> None:
        params = parse_qs(query)
        workload = (params.get("workload") or [""])[0]
        at_text = (params.get("at") or [""])[0]
        try:
            at = parse_rfc3339(at_text) if at_text else None
            if at_text and at is None:
                raise PermanentError(f"at: not an RFC 3339 time: {at_text!r}")
            status, body = 200, {"status": "success", "data": explain(workload, at)}
        except NotFound as exc:
            status, body = 404, {"status": "error", "errorType": "not_found", "error": str(exc)}
        except TransientError as exc:
            status, body = 503, {"status": "error", "errorType": "unavailable", "error": str(exc)}
        except GuardianError as exc:
            status, body = 400, {"status": "error", "errorType": "bad_data", "error": str(exc)}
        self._reply(handler, status, json.dumps(body).encode(), "application/json")

    def _route(self, handler: BaseHTTPRequestHandler, path: str, query: str) -> None:
        if path == "/api/v1/alerts":
            alerts = [alert_json(a) for a in self.engine.active_alerts()]
            body = {"status": "success", "data": {"alerts": alerts}}
            self._reply(handler, 200, json.dumps(body).encode(), "application/json")
        elif path == "/api/v1/status" and self.status is not None:
            body = {"status": "success", "data": self.status()}
            self._reply(handler, 200, json.dumps(body).encode(), "application/json")
        elif path == "/api/v1/explain" and self.explain is not None:
            self._explain(handler, self.explain, query)
        elif path == "/graph":
            graph = json.dumps(graph_json(self.engine, query)).encode()
            self._reply(handler, 200, graph, "application/json")
        elif path == "/metrics":
            data = generate_latest(self.engine.metrics.registry)
            self._reply(handler, 200, data, CONTENT_TYPE_LATEST)
        else:
            self._reply(handler, 404, b"not found\n", "text/plain")

    @staticmethod
    def _reply(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        ctype: str,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in headers or ():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
