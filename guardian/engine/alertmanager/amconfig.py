"""``guardian alertmanager-config``: an Alertmanager configuration for the rule packs'
alerts, as a plain config (``amtool check-config`` accepts it) or as a prometheus-operator
``AlertmanagerConfig`` (monitoring.coreos.com/v1alpha1).

- **Route**: one branch per ``guardian_class`` (``reclaimable``: waste alerts,
  ``rightsize``: right-sizing advice, ``pipeline``: the metrics pipeline's health,
  ``violation``: GPU use without a request, ``coverage``: devices whose idleness cannot
  be judged), and under it one per ``severity``, each to its own receiver (named
  ``<prefix>-<class>-<severity>``): empty, to fill in, or with the Slack, PagerDuty and
  webhook integrations of ``receivers.py``.
- **Inhibition**: a pipeline alert about a node inhibits the alerts read from that node's
  exporter data, waste, advice, violation and coverage alike
  (``equal: [cluster, node]``); one that names no node inhibits them in its whole
  cluster (``equal: [cluster]``); one that names no cluster either, all of them. For
  waste alerts that is the same hold the remediation planner applies
  (``guards.pipeline_reason``); a frozen exporter would also keep an advice, violation
  or coverage alert going.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guardian.engine.alertmanager.receivers import (
    Receivers,
    check_receivers,
    integrations,
    page_selectors,
)
from guardian.model.rules import AlertingRule
from guardian_common.errors import ConfigError

CLASS_LABEL = "guardian_class"
SEVERITY_LABEL = "severity"
PIPELINE = "pipeline"
WASTE = "reclaimable"
ADVICE = "rightsize"  # GpuMemoryUnderutilized: notified, never acted on
# The classes whose alerts come from the exporters' data: a pipeline alert inhibits them.
INHIBITED = (WASTE, ADVICE, "violation", "coverage")


@dataclass(frozen=True)
class AmConfigOptions:
    receiver_prefix: str = "gpu-guardian"
    group_by: tuple[str, ...] = ("alertname", "cluster", CLASS_LABEL, SEVERITY_LABEL)
    receivers: Receivers = field(default_factory=Receivers)  # none: left empty


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    def text(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{self.op}"{escaped}"'

    def resource(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "matchType": self.op}


@dataclass(frozen=True)
class Inhibition:
    source: tuple[Matcher, ...]
    target: tuple[Matcher, ...]
    equal: tuple[str, ...]


@dataclass(frozen=True)
class RouteNode:
    receiver: str
    matchers: tuple[Matcher, ...] = ()
    routes: tuple[RouteNode, ...] = ()
    cls: str = ""  # the guardian_class it routes ("" for the root)
    severity: str = ""  # the severity it routes ("" for the root and a class's fallback)


def classes(rules: Iterable[AlertingRule]) -> dict[str, list[str]]:
    """``guardian_class`` -> its severities, from the rules' static labels (templated
    values cannot be routed on ahead of time and are left out)."""
    found: dict[str, set[str]] = {}
    for rule in rules:
        cls = rule.labels.get(CLASS_LABEL, "")
        if not cls or "{{" in cls:
            continue
        severity = rule.labels.get(SEVERITY_LABEL, "")
        severities = found.setdefault(cls, set())
        if severity and "{{" not in severity:
            severities.add(severity)
    return {cls: sorted(found[cls]) for cls in sorted(found)}


def routes(rules: Iterable[AlertingRule], options: AmConfigOptions) -> RouteNode:
    prefix = options.receiver_prefix
    branches = tuple(
        RouteNode(
            f"{prefix}-{cls}",
            (Matcher(CLASS_LABEL, "=", cls),),
            tuple(
                RouteNode(
                    f"{prefix}-{cls}-{sev}",
                    (Matcher(SEVERITY_LABEL, "=", sev),),
                    cls=cls,
                    severity=sev,
                )
                for sev in severities
            ),
            cls=cls,
        )
        for cls, severities in classes(rules).items()
    )
    return RouteNode(prefix, (), branches)


def inhibitions() -> tuple[Inhibition, ...]:
    source = Matcher(CLASS_LABEL, "=", PIPELINE)
    target = (Matcher(CLASS_LABEL, "=~", "|".join(INHIBITED)),)
    has = {name: Matcher(name, "!=", "") for name in ("cluster", "node")}
    lacks = {name: Matcher(name, "=", "") for name in ("cluster", "node")}
    return (
        Inhibition((source, has["node"], has["cluster"]), target, ("cluster", "node")),
        Inhibition((source, has["node"], lacks["cluster"]), target, ("node",)),
        Inhibition((source, lacks["node"], has["cluster"]), target, ("cluster",)),
        Inhibition((source, lacks["node"], lacks["cluster"]), target, ()),
    )


def _receivers(node: RouteNode) -> list[RouteNode]:
    return [node, *(found for child in node.routes for found in _receivers(child))]


def _plain_receivers(
    root: RouteNode, rules: Iterable[AlertingRule], receivers: Receivers
) -> list[dict[str, Any]]:
    """Every receiver the routes name, with the integrations ``receivers`` gives it."""
    found = classes(rules)
    check_receivers(receivers, found)
    pages = page_selectors(receivers, found)
    return [
        {"name": node.receiver, **integrations(receivers, pages, node.cls, node.severity)}
        for node in _receivers(root)
    ]


def _route(node: RouteNode, render: Callable[[Matcher], Any]) -> dict[str, Any]:
    """The route tree from ``node``; matchers written by ``render`` (text or resource)."""
    out: dict[str, Any] = {"receiver": node.receiver}
    if node.matchers:
        out["matchers"] = [render(m) for m in node.matchers]
    if node.routes:
        out["routes"] = [_route(child, render) for child in node.routes]
    return out


def alertmanager_config(rules: Iterable[AlertingRule], options: AmConfigOptions) -> dict[str, Any]:
    """The plain Alertmanager configuration (``alertmanager.yml``). ConfigError for
    ``options.receivers`` that ``check_receivers`` refuses."""
    rules = list(rules)
    root = routes(rules, options)
    route = {"receiver": root.receiver, "group_by": list(options.group_by)}
    route.update(_route(root, Matcher.text))
    return {
        "route": route,
        "receivers": _plain_receivers(root, rules, options.receivers),
        "inhibit_rules": _inhibit_rules("source_matchers", "target_matchers", Matcher.text),
    }


def _inhibit_rules(source_key: str, target_key: str, render: Callable[[Matcher], Any]) -> list[Any]:
    """``inhibitions()`` written out: the plain config and the resource differ only in
    their keys and in how they write a matcher."""
    out = []
    for rule in inhibitions():
        item: dict[str, Any] = {
            source_key: [render(m) for m in rule.source],
            target_key: [render(m) for m in rule.target],
        }
        if rule.equal:
            item["equal"] = list(rule.equal)
        out.append(item)
    return out


def alertmanager_config_resource(
    rules: Iterable[AlertingRule],
    options: AmConfigOptions,
    *,
    name: str,
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The same as a prometheus-operator ``AlertmanagerConfig``. The operator adds a
    ``namespace`` matcher to its route and inhibit rules unless the Alertmanager resource
    sets ``alertmanagerConfigMatcherStrategy: {type: None}`` (see docs/alertmanager.md).
    Its receivers are left empty: the resource takes Secret references, not files, so
    ``options.receivers`` is a ConfigError."""
    if options.receivers.any():
        raise ConfigError(
            "the receiver flags write file paths for alertmanager.yml; an "
            "AlertmanagerConfig takes Secret references: fill in its receivers",
            field="--format alertmanagerconfig",
        )
    root = routes(rules, options)
    route = {"receiver": root.receiver, "groupBy": list(options.group_by)}
    route.update(_route(root, Matcher.resource))
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = dict(labels)
    inhibit = _inhibit_rules("sourceMatch", "targetMatch", Matcher.resource)
    return {
        "apiVersion": "monitoring.coreos.com/v1alpha1",
        "kind": "AlertmanagerConfig",
        "metadata": metadata,
        "spec": {
            "route": route,
            "receivers": [{"name": node.receiver} for node in _receivers(root)],
            "inhibitRules": inhibit,
        },
    }
