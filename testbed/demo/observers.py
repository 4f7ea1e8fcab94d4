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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.kube.episode_store import STATE_LABEL, decode
from guardian.adapters.ledger import Ledger
from guardian.model.remediation_events import RemediationEvent, StepOutcome
from guardian.model.shared_episode import SharedEpisode
from guardian_common.errors import GuardianError
from testbed.demo.cluster import CONTROLLER_NAMESPACE, deployment_state
from testbed.demo.timeline import alert_subject, slack_preview, slack_title
from testbed.kubeapi import FakeKubeAPI
from testbed.slackapi import FakeSlack

logger = logging.getLogger(__name__)

Event = tuple[str, str, list[str]]
LabelKey = tuple[tuple[str, str], ...]


def get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        return json.loads(response.read())


@dataclass
class AlertObserver:
    """The engine's pending and firing alerts, by label set, from the first replica of
    ``engine_urls`` that answers (the leader first)."""

    engine_urls: Callable[[], list[str]]
    states: dict[LabelKey, str] = field(default_factory=dict)
    # Every (labels, state) ever seen, in order.
    seen: list[tuple[dict[str, str], str]] = field(default_factory=list)

    def _read(self) -> Any:
        for url in self.engine_urls():
            try:
                return get_json(f"{url}/api/v1/alerts")
            except (OSError, ValueError) as exc:
                logger.debug("alerts of %s not readable: %s", url, exc)
        return None

    def poll(self) -> list[Event]:
        data = self._read()
        if data is None:
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
    """Remediation events of every replica's ledger, in the order they were read."""

    state_paths: list[Path]
    events: list[RemediationEvent] = field(default_factory=list)
    _ledgers: dict[Path, Ledger] = field(default_factory=dict)
    _cursors: dict[Path, int] = field(default_factory=dict)

    def _open(self, path: Path) -> Ledger | None:
        if path not in self._ledgers:
            if not path.exists():
                return None
            try:
                self._ledgers[path] = Ledger.open(str(path))
            except GuardianError as exc:
                logger.debug("ledger not readable yet: %s", exc)
                return None
        return self._ledgers[path]

    def poll(self) -> list[Event]:
        found: list[Event] = []
        for path in self.state_paths:
            ledger = self._open(path)
            if ledger is None:
                continue
            new = ledger.events_since(self._cursors.get(path, 0))
            if new:
                self._cursors[path] = new[-1].seq or 0
            self.events.extend(new)
            name = path.parent.name.removeprefix("state-")
            found += [("ledger", f"{_describe(e)} [replica {name}]", []) for e in new]
        return found

    def close(self) -> None:
        for ledger in self._ledgers.values():
            ledger.close()
        self._ledgers.clear()

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


def shared_episodes(kube: FakeKubeAPI) -> list[SharedEpisode]:
    """The episode state the replicas share, as the fake API holds it."""
    found = []
    for cm in kube.objects("ConfigMap", CONTROLLER_NAMESPACE):
        if (cm["metadata"].get("labels") or {}).get(STATE_LABEL) != "episodes":
            continue
        for key, text in (cm.get("data") or {}).items():
            try:
                found.append(decode(key, text))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                logger.debug("shared record %s unreadable: %s", key, exc)
    return sorted(found, key=lambda e: (e.started_at, e.episode))


def prometheus_query(url: str, query: str) -> list[dict[str, Any]]:
    """An instant query's result list; [] when Prometheus cannot answer."""
    try:
        data = get_json(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': query})}")
    except (OSError, ValueError, urllib.error.URLError) as exc:
        logger.debug("query %s failed: %s", query, exc)
        return []
    result = data.get("data", {}).get("result", [])
    return list(result) if isinstance(result, list) else []
