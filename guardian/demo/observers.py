"""What the demo watches while the loop runs, each remembering what it saw.

Every observer's ``poll()`` returns new timeline events (source, text, detail lines)
and keeps the history the outcome checks read afterwards. Reads are cheap: the
engine's ``/api/v1/alerts``, the fake Slack's and fake API's in-process state, and
the ledger in the engine's state database.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.ledger import Ledger
from guardian.demo.cluster import deployment_state
from guardian.demo.timeline import alert_subject, slack_preview, slack_title
from guardian.model.remediation_events import RemediationEvent, StepOutcome
from guardian.sim.kubeapi import FakeKubeAPI
from guardian.sim.slackapi import FakeSlack
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)

Event = tuple[str, str, list[str]]
LabelKey = tuple[tuple[str, str], ...]


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


@dataclass
class AlertObserver:
    """The engine's pending and firing alerts, by label set."""

    engine_url: str
    states: dict[LabelKey, str] = field(default_factory=dict)
    # Every (labels, state) ever seen, in order.
    seen: list[tuple[dict[str, str], str]] = field(default_factory=list)

    def poll(self) -> list[Event]:
        try:
            data = get_json(f"{self.engine_url}/api/v1/alerts")
        except (OSError, ValueError) as exc:
            logger.debug("alerts not readable yet: %s", exc)
            return []
        now: dict[LabelKey, tuple[dict[str, str], str]] = {}
        for alert in data.get("data", {}).get("alerts", []):
            labels = {str(k): str(v) for k, v in alert.get("labels", {}).items()}
            now[tuple(sorted(labels.items()))] = (labels, str(alert.get("state")))
        events: list[Event] = []
        for key, (labels, state) in now.items():
            if self.states.get(key) != state:
                self.seen.append((labels, state))
                events.append(
                    ("alert", f"{labels.get('alertname')} {state}: {alert_subject(labels)}", [])
                )
        for key in set(self.states) - set(now):
            labels = dict(key)
            events.append(
                ("alert", f"{labels.get('alertname')} ended: {alert_subject(labels)}", [])
            )
        self.states = {key: state for key, (_, state) in now.items()}
        return events

    def ever(
        self, alertname: str, state: str = "firing", *, workload: str = "", **match: str
    ) -> list[dict[str, str]]:
        """Alerts seen in ``state`` with these labels; ``workload``: pods named after it."""
        return [
            labels
            for labels, s in self.seen
            if s == state
            and labels.get("alertname") == alertname
            and labels.get("pod", "").startswith(workload)
            and all(labels.get(k) == v for k, v in match.items())
        ]


@dataclass
class SlackObserver:
    """Parents, their edits and their thread replies in the fake workspace."""

    slack: FakeSlack
    channel: str
    updates: dict[str, int] = field(default_factory=dict)
    replies: dict[str, int] = field(default_factory=dict)

    def poll(self) -> list[Event]:
        events: list[Event] = []
        for message in self.slack.messages(self.channel):
            ts = message.ts
            if ts not in self.updates:
                self.updates[ts] = 0
                self.replies[ts] = 0
                events.append(("slack", "new message", slack_preview(message.text, message.blocks)))
            if message.update_count > self.updates[ts]:
                self.updates[ts] = message.update_count
                title = slack_title(message.text, message.blocks)
                events.append(("slack", f"message updated → {title}", []))
            events.extend(
                ("slack", "thread reply", [reply.text])
                for reply in message.replies[self.replies[ts] :]
            )
            self.replies[ts] = len(message.replies)
        return events


@dataclass
class LedgerObserver:
    """Remediation events, in ledger order."""

    state_path: Path
    events: list[RemediationEvent] = field(default_factory=list)
    _ledger: Ledger | None = None

    def poll(self) -> list[Event]:
        if self._ledger is None:
            if not self.state_path.exists():
                return []
            try:
                self._ledger = Ledger.open(str(self.state_path))
            except GuardianError as exc:
                logger.debug("ledger not readable yet: %s", exc)
                return []
        seq = self.events[-1].seq if self.events else 0
        new = self._ledger.events_since(seq or 0)
        self.events.extend(new)
        return [("ledger", _describe(e), []) for e in new]

    def close(self) -> None:
        if self._ledger is not None:
            self._ledger.close()
            self._ledger = None

    def find(
        self, ref: str, step: str, outcome: StepOutcome = StepOutcome.APPLIED
    ) -> list[RemediationEvent]:
        return [
            e
            for e in self.events
            if _ref(e) == ref and e.step.value == step and e.outcome is outcome
        ]


def _ref(e: RemediationEvent) -> str:
    return f"{e.workload.namespace}/{e.workload.kind}/{e.workload.name}"


def _describe(e: RemediationEvent) -> str:
    text = f"{e.step.value} {e.outcome.value} on {_ref(e)}"
    if e.original_replicas is not None:
        text += f" (original replicas {e.original_replicas})"
    if e.reason:
        text += f": {e.reason}"
    return text


@dataclass
class KubeObserver:
    """Replicas and gpu-guardian.io annotations of the Deployments, as the API holds them."""

    kube: FakeKubeAPI
    deployments: list[tuple[str, str]]
    last: dict[tuple[str, str], tuple[int, Mapping[str, str]]] = field(default_factory=dict)
    history: dict[tuple[str, str], list[tuple[int, dict[str, str]]]] = field(default_factory=dict)

    def poll(self) -> list[Event]:
        events: list[Event] = []
        for ns, name in self.deployments:
            replicas, annotations = deployment_state(self.kube, ns, name)
            before = self.last.get((ns, name))
            self.history.setdefault((ns, name), [])
            if before == (replicas, annotations):
                continue
            self.history[(ns, name)].append((replicas, dict(annotations)))
            self.last[(ns, name)] = (replicas, annotations)
            if before is None:
                continue
            old_replicas, old_annotations = before
            if replicas != old_replicas:
                events.append(
                    (
                        "kubernetes",
                        f"{ns}/Deployment/{name} replicas {old_replicas} → {replicas}",
                        [],
                    )
                )
            added = {k: v for k, v in annotations.items() if old_annotations.get(k) != v}
            removed = sorted(set(old_annotations) - set(annotations))
            detail = [f"+ {k}={v}" for k, v in sorted(added.items())]
            detail += [f"- {k}" for k in removed]
            if detail:
                events.append(("kubernetes", f"{ns}/Deployment/{name} annotations changed", detail))
        return events

    def ever(self, ns: str, name: str) -> list[tuple[int, dict[str, str]]]:
        return self.history.get((ns, name), [])


def prometheus_query(url: str, query: str) -> list[dict[str, Any]]:
    """An instant query's result list; [] when Prometheus cannot answer."""
    try:
        data = get_json(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': query})}")
    except (OSError, ValueError, urllib.error.URLError) as exc:
        logger.debug("query %s failed: %s", query, exc)
        return []
    result = data.get("data", {}).get("result", [])
    return list(result) if isinstance(result, list) else []
