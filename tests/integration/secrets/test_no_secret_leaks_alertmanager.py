"""No credential in any output of the Alertmanager client, the notification queue, the
silence lookups and the ruler's rules reader, driven through every hostile mode of the
echoing server (see test_no_secret_leaks.py for the method)."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardian.adapters.alert_queue import NotificationQueue
from guardian.adapters.alertmanager import AlertmanagerClient
from guardian.adapters.prometheus_rules import PrometheusRulesReader
from guardian.app.alertmanager.silence_gather import SilenceGatherer
from guardian.model.alertmanager_api import PostableAlert
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig
from guardian.model.labels import LabelSet
from guardian.model.reclaim import FiringAlert

from .hostile import HostileServer
from .test_no_secret_leaks import (  # fixtures, used by name
    FILE_USER,
    HEADER_KEY,
    INLINE_PASSWORD,
    INLINE_USER,
    QUERY_KEY,
    USERINFO,
    Outputs,
    closed_port,
    each_mode,
    files,
    outputs,
    server,
)

__all__ = ["files", "outputs", "server"]


def configs(server: HostileServer, files: dict[str, Path]) -> list[HttpClientConfig]:
    return [
        HttpClientConfig(
            server.url(f"/am?api_key={QUERY_KEY}", USERINFO),
            timeout=1,
            headers={"X-Api-Key": HEADER_KEY},
        ),
        HttpClientConfig(
            server.url("/am"), timeout=1, basic_auth=BasicAuthConfig(INLINE_USER, INLINE_PASSWORD)
        ),
        HttpClientConfig(server.url("/am"), timeout=1, bearer_token_file=files["token"]),
        HttpClientConfig(
            server.url("/am"),
            timeout=1,
            basic_auth=BasicAuthConfig(FILE_USER, None, files["password"]),
        ),
        # urllib3's "Max retries exceeded with url: ..." repeats the query string.
        HttpClientConfig(
            f"http://{USERINFO}@127.0.0.1:{closed_port()}/am?api_key={QUERY_KEY}", timeout=1
        ),
    ]


ALERT = PostableAlert(LabelSet({"alertname": "GpuIdle"}), LabelSet(), 0.0, 1.0, "http://g/graph")
FIRING = FiringAlert(LabelSet({"alertname": "GpuIdle", "pod": "p"}), 0.0, True)


@pytest.mark.timeout(180)
def test_alertmanager_clients(
    server: HostileServer, outputs: Outputs, files: dict[str, Path]
) -> None:
    for n, config in enumerate(configs(server, files)):
        client = AlertmanagerClient(config)
        outputs.add(f"alertmanager {n} name", client.name)
        each_mode(server, outputs, f"alertmanager {n} post", lambda c=client: c.post_alerts(b"[]"))
        each_mode(server, outputs, f"alertmanager {n} alerts", lambda c=client: c.alerts())
        each_mode(server, outputs, f"alertmanager {n} silences", lambda c=client: c.silences())
        gatherer = SilenceGatherer([client], lambda labels: labels)
        each_mode(
            server,
            outputs,
            f"alertmanager {n} silence lookup",
            lambda g=gatherer: outputs.add("lookup", repr(g([FIRING]))),
        )
        queue = NotificationQueue([client], capacity=2)
        each_mode(server, outputs, f"alertmanager {n} queue", lambda q=queue: q.deliver([ALERT]))
        queue.stop()
        client.close()


@pytest.mark.timeout(180)
def test_rules_reader(server: HostileServer, outputs: Outputs, files: dict[str, Path]) -> None:
    for n, config in enumerate(configs(server, files)):
        reader = PrometheusRulesReader(config)
        outputs.add(f"rules {n} name", reader.name)
        each_mode(server, outputs, f"rules {n}", reader.groups)
        reader.close()
