"""Reads ``GET /api/v1/rules?type=alert`` of a Prometheus or Thanos Ruler: every alerting
rule with its health, last evaluation and active alerts, in one consistent answer.

(``/api/v1/alerts`` lists the same alert objects, but without the rule they belong to or
its health; ``/api/v1/rules`` nests them under their rule, so one read gives both.)
Errors: connection problems, timeouts, 5xx and 429 are transient; other statuses and
unreadable bodies are permanent.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from guardian.adapters.http_credentials import EndpointClient
from guardian.model.alerts import AlertState
from guardian.model.labels import LabelSet
from guardian.model.remote_rules import RemoteAlert, RemoteGroup, RemoteRule
from guardian.model.times import parse_rfc3339
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

_NEVER = -62135596800.0  # Go's zero time, what an unevaluated rule reports


class RulesUnavailable(TransientError):
    """The rules API did not answer, or answered 5xx/429."""

    reason = "connection"


class RulesRejected(PermanentError):
    """The rules API refused the request or answered something unreadable."""

    reason = "rules_api"


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _labels(value: Any) -> LabelSet:
    return LabelSet({str(k): str(v) for k, v in (value or {}).items()})


def _alert(item: dict[str, Any]) -> RemoteAlert | None:
    state = str(item.get("state", ""))
    if state not in (AlertState.PENDING.value, AlertState.FIRING.value):
        return None
    return RemoteAlert(
        _labels(item.get("labels")),
        _labels(item.get("annotations")),
        AlertState(state),
        parse_rfc3339(str(item.get("activeAt", ""))) or 0.0,
        _float(item.get("value")),
    )


def _rule(item: dict[str, Any]) -> RemoteRule:
    last = parse_rfc3339(str(item.get("lastEvaluation", "")))
    alerts = (_alert(a) for a in item.get("alerts") or ())
    return RemoteRule(
        name=str(item.get("name", "")),
        query=str(item.get("query", "")),
        duration=_float(item.get("duration", 0)),
        labels={str(k): str(v) for k, v in (item.get("labels") or {}).items()},
        health=str(item.get("health", "unknown")),
        last_error=str(item.get("lastError", "")),
        last_evaluation=None if last is None or last <= _NEVER else last,
        alerts=tuple(a for a in alerts if a is not None),
    )


def parse_rule_groups(body: Any) -> tuple[RemoteGroup, ...]:
    """The alerting rules of a ``/api/v1/rules`` answer."""
    if not isinstance(body, dict) or body.get("status") != "success":
        raise RulesRejected(f"unexpected /api/v1/rules answer: {str(body)[:200]}")
    groups = (body.get("data") or {}).get("groups") or []
    try:
        return tuple(
            RemoteGroup(
                str(g.get("name", "")),
                str(g.get("file", "")),
                _float(g.get("interval", 0)),
                tuple(_rule(r) for r in g.get("rules") or () if r.get("type") == "alerting"),
            )
            for g in groups
        )
    except (AttributeError, TypeError) as exc:
        raise RulesRejected(f"unreadable /api/v1/rules answer: {exc}") from exc


class PrometheusRulesReader(EndpointClient):
    """One Prometheus or Thanos Ruler. Thread-safe for reads."""

    kind = "rules of"
    rejected = RulesRejected
    unavailable = RulesUnavailable

    def groups(self) -> tuple[RemoteGroup, ...]:
        base = urlsplit(self.config.url)
        url = urlunsplit(base._replace(path=f"{base.path.rstrip('/')}/api/v1/rules"))
        response = self._endpoint.send(
            self._session,
            "GET",
            url,
            params={"type": "alert"},
            headers=dict(self.config.headers),
        )
        status = response.status_code
        if status != 200:
            detail = self._secrets.scrub(response.text[:200].strip())
            message = f"rules of {self.name}: HTTP {status}: {detail}"
            if status == 429 or status >= 500:
                raise RulesUnavailable(message)
            raise RulesRejected(message)
        try:
            body = response.json()
        except ValueError as exc:
            raise RulesRejected(f"rules of {self.name}: the answer is not JSON") from exc
        return parse_rule_groups(body)
