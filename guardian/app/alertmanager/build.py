"""Build the Alertmanager output and the silence checks from the ``alertmanager:`` and
``alerts:`` settings, for ``guardian run`` (app/controller.py wires them)::

    parts = build_alertmanager(settings, engine, is_leader=..., registry=...)
    engine.listeners.insert(0, parts.output.on_evaluation)   # when it sends
    remediation.loop.suppressions = parts.gatherer
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from guardian.adapters.alert_queue import NotificationQueue
from guardian.adapters.alertmanager import AlertmanagerClient
from guardian.adapters.http_credentials import check_client_files
from guardian.app.alertmanager.metrics import AlertmanagerMetrics
from guardian.app.alertmanager.output import AlertmanagerOutput
from guardian.app.alertmanager.silence_gather import SilenceGatherer
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import Settings
from guardian.engine.alertmanager.sending import SendSettings, outgoing_labels
from guardian.engine.alertmanager.suppression import Outgoing
from guardian.model.labels import LabelSet


@dataclass
class AlertmanagerParts:
    clients: list[AlertmanagerClient]
    gatherer: SilenceGatherer
    metrics: AlertmanagerMetrics
    queue: NotificationQueue | None = None
    output: AlertmanagerOutput | None = None

    def start(self) -> None:
        if self.queue is not None:
            self.queue.start()

    def close(self) -> None:
        if self.queue is not None:
            self.queue.stop()
        for client in self.clients:
            client.close()


def _as_is(labels: LabelSet) -> LabelSet | None:
    return labels


def _as_sent(settings: SendSettings) -> Outgoing:
    """How Alertmanager lists an alert we send: external labels, then relabelling."""

    def outgoing(labels: LabelSet) -> LabelSet | None:
        return outgoing_labels(labels, settings)

    return outgoing


def build_alertmanager(
    settings: Settings,
    engine: RuleEngine,
    *,
    is_leader: Callable[[], bool] = lambda: True,
    registry: CollectorRegistry | None = None,
) -> AlertmanagerParts | None:
    """The parts for ``settings.alertmanager`` (None when unset). Raises ConfigError for a
    TLS file that does not exist or a file it cannot read. The engine's alerts are sent
    only when it evaluates (``alerts.source: engine``) and ``send`` is on."""
    am = settings.alertmanager
    if am is None:
        return None
    clients = []
    for i, endpoint in enumerate(am.alertmanagers):
        config = endpoint.client_config()
        check_client_files(config, f"alertmanager.alertmanagers[{i}]")
        clients.append(AlertmanagerClient(config))
    metrics = AlertmanagerMetrics(registry, capacity=am.queue_capacity)
    sends = am.send and settings.alerts.source == "engine"
    send_settings = SendSettings(
        resend_delay=am.resend_delay,
        external_labels=dict(settings.external_labels),
        relabel=am.relabel_configs(),
        external_url=settings.external_url,
    )
    outgoing: Outgoing = _as_is  # another sender's alerts: found by our labels alone
    queue = output = None
    if sends:
        queue = NotificationQueue(clients, capacity=am.queue_capacity, observer=metrics)
        output = AlertmanagerOutput(engine, queue, send_settings, is_leader=is_leader)
        outgoing = _as_sent(send_settings)
    gatherer = SilenceGatherer(
        clients, outgoing, queue=queue, wait=am.silence_wait, metrics=metrics
    )
    return AlertmanagerParts(clients, gatherer, metrics, queue, output)
