"""Which alerts go to Alertmanager after an evaluation, and their bodies: Prometheus 2.42's
``Alert.needsSending``, ``AlertingRule.sendAlerts`` (``rules/alerting.go``),
``rules.SendAlerts`` (``rules/manager.go``) and the first half of ``Notifier.Send``
(``notifier/notifier.go``: external labels, then ``alert_relabel_configs``).

Pure: a rule's alert map and when each alert was last sent come in; the bodies to
enqueue and the new send times go out. Pending alerts are never sent; a resolved alert
is sent at once and then again every resend interval until the engine forgets it (15m).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from urllib.parse import quote_plus

from guardian.engine.alertmanager.relabel import process
from guardian.model.alertmanager_api import PostableAlert
from guardian.model.alerts import Alert, AlertState
from guardian.model.labels import LabelSet
from guardian.model.relabel_config import RelabelConfig

# Identity of an alert across evaluations: the rule's key in its group and its labels.
AlertKey = tuple[str, LabelSet]


@dataclass(frozen=True, slots=True)
class SentRecord:
    """``Alert.LastSentAt`` of one alert object: a new alert with the same labels (after a
    resolution) has another ``active_at`` and starts with nothing sent, as in Prometheus."""

    active_at: float
    last_sent_at: float


@dataclass(frozen=True)
class RuleAlerts:
    """One alerting rule after an evaluation that succeeded (only those send)."""

    key: str  # the rule's key in its group
    expr: str  # the expression text as evaluated: generatorURL links to it
    alerts: Mapping[LabelSet, Alert]


@dataclass(frozen=True)
class SendSettings:
    """``--rules.alert.resend-delay``, ``global.external_labels``, the alert relabelling
    and ``--web.external-url`` (for generatorURL)."""

    resend_delay: float = 60.0
    external_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    relabel: tuple[RelabelConfig, ...] = ()
    external_url: str = ""


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def needs_sending(alert: Alert, sent: SentRecord | None, ts: float, resend_delay: float) -> bool:
    """``Alert.needsSending``: never pending; a resolution at once; else after the delay
    (strictly: with interval = delay = 1m a firing alert goes out every 2 minutes)."""
    if alert.state is AlertState.PENDING:
        return False
    last = sent.last_sent_at if sent is not None and sent.active_at == alert.active_at else None
    if alert.resolved_at is not None and (last is None or alert.resolved_at > last):
        return True
    return last is None or _ms(last + resend_delay) < _ms(ts)


def generator_url(external_url: str, expr: str) -> str:
    """``externalURL + strutil.TableLinkForExpression(expr)``; Go's ``url.QueryEscape``
    is ``quote_plus`` with nothing kept but letters, digits and ``-_.~``."""
    base = external_url.rstrip("/")
    return f"{base}/graph?g0.expr={quote_plus(expr, safe='-_.~')}&g0.tab=1"


def outgoing_labels(labels: LabelSet, settings: SendSettings) -> LabelSet | None:
    """The labels Alertmanager receives: external labels where the alert has none of that
    name, then ``alert_relabel_configs`` (None: dropped, never sent)."""
    merged = dict(settings.external_labels)
    merged.update(labels)
    return process(merged, settings.relabel)


def plan_sends(
    rules: Sequence[RuleAlerts],
    sent: Mapping[AlertKey, SentRecord],
    ts: float,
    interval: float,
    settings: SendSettings,
) -> tuple[list[PostableAlert], dict[AlertKey, SentRecord]]:
    """The alerts of ``rules`` to send at ``ts`` (the group's evaluation, ``interval`` its
    period) and the send records of every alert the rules still hold."""
    valid_for = 4 * max(interval, settings.resend_delay)  # two missed sends to spare
    out: list[PostableAlert] = []
    records: dict[AlertKey, SentRecord] = {}
    for rule in rules:
        for labels, alert in rule.alerts.items():
            key = (rule.key, labels)
            previous = sent.get(key)
            if previous is not None and previous.active_at != alert.active_at:
                previous = None  # another alert object now
            if not needs_sending(alert, previous, ts, settings.resend_delay):
                if previous is not None:
                    records[key] = previous
                continue
            records[key] = SentRecord(alert.active_at, ts)
            outgoing = outgoing_labels(labels, settings)
            if outgoing is None:
                continue
            ends_at = alert.resolved_at if alert.resolved_at is not None else ts + valid_for
            out.append(
                PostableAlert(
                    outgoing,
                    alert.annotations,
                    # FiredAt; an alert restored without one (older state) keeps its start.
                    starts_at=alert.fired_at if alert.fired_at is not None else alert.active_at,
                    ends_at=ends_at,
                    generator_url=generator_url(settings.external_url, rule.expr),
                )
            )
    return out, records
