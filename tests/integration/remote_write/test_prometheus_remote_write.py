"""ALERTS and ALERTS_FOR_STATE written to a real Prometheus over remote write, then queried back."""

from __future__ import annotations

import time
from typing import Any

import pytest

from guardian.adapters.remote_write import RemoteWriteClient
from guardian.engine.rules.alert_series import build_alert_series, stale_series
from guardian.model.alerts import AlertState
from guardian.model.http_client import HttpClientConfig
from guardian.model.series import ActiveAlertSample, TimeSeries
from guardian_common.errors import PermanentError
from tests.helpers import prom_get
from tests.plugins.prometheus_fixture import PrometheusFactory

pytestmark = pytest.mark.e2e


def _recent_minute() -> int:
    # Prometheus refuses samples far behind its head, so write near the wall clock.
    return (int(time.time()) // 60) * 60 - 600


def _query(url: str, query: str, at: int) -> dict[tuple[tuple[str, str], ...], str]:
    data: Any = prom_get(url, "/api/v1/query", query=query, time=str(at))
    assert data["resultType"] == "vector"
    result: dict[tuple[tuple[str, str], ...], str] = {}
    for item in data["result"]:
        assert item["value"][0] == at
        result[tuple(sorted(item["metric"].items()))] = item["value"][1]
    return result


def _labels(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def test_alerts_written_come_back_and_resolved_ones_disappear_at_once(
    prometheus: PrometheusFactory,
) -> None:
    prom = prometheus()
    client = RemoteWriteClient(HttpClientConfig(f"{prom.url}/api/v1/write", timeout=10))
    t0 = _recent_minute()
    idle = {"alertname": "GpuIdle", "pod": "train-0", "namespace": "ml"}
    hot = {"alertname": "GpuHot", "gpu": "3", "severity": "critical"}
    cycles = [
        [
            ActiveAlertSample(idle, AlertState.PENDING, t0 + 0.25),
            ActiveAlertSample(hot, AlertState.FIRING, t0 - 3600.5),
        ],
        [
            ActiveAlertSample(idle, AlertState.FIRING, t0 + 0.25),
            ActiveAlertSample(hot, AlertState.FIRING, t0 - 3600.5),
        ],
        [ActiveAlertSample(idle, AlertState.FIRING, t0 + 0.25)],  # GpuHot resolved
    ]
    previous: list[TimeSeries] = []
    for i, alerts in enumerate(cycles):
        at_ms = (t0 + 60 * i) * 1000
        current = build_alert_series(alerts, at_ms)
        client.write(current + stale_series(previous, current, at_ms))
        previous = current

    idle_pending = _labels(__name__="ALERTS", alertstate="pending", **idle)
    idle_firing = _labels(__name__="ALERTS", alertstate="firing", **idle)
    hot_firing = _labels(__name__="ALERTS", alertstate="firing", **hot)
    assert _query(prom.url, "ALERTS", t0) == {idle_pending: "1", hot_firing: "1"}
    assert _query(prom.url, "ALERTS_FOR_STATE", t0) == {
        _labels(__name__="ALERTS_FOR_STATE", **idle): str(t0),
        _labels(__name__="ALERTS_FOR_STATE", **hot): str(t0 - 3601),
    }
    # The pending series ended with a stale marker: no 5-minute lookback tail.
    assert _query(prom.url, "ALERTS", t0 + 60) == {idle_firing: "1", hot_firing: "1"}
    for at in (t0 + 120, t0 + 150):
        assert _query(prom.url, "ALERTS", at) == {idle_firing: "1"}
        assert _query(prom.url, "ALERTS_FOR_STATE", at) == {
            _labels(__name__="ALERTS_FOR_STATE", **idle): str(t0)
        }
    # A pending alert is visible the way rule authors query it.
    assert _query(prom.url, 'ALERTS{alertstate="pending"}', t0) == {idle_pending: "1"}


def test_resending_is_harmless_and_a_refused_sample_is_permanent(
    prometheus: PrometheusFactory,
) -> None:
    prom = prometheus()
    client = RemoteWriteClient(HttpClientConfig(f"{prom.url}/api/v1/write", timeout=10))
    t0 = _recent_minute()
    alert = ActiveAlertSample({"alertname": "GpuIdle"}, AlertState.FIRING, t0)
    late = build_alert_series([alert], (t0 + 60) * 1000)

    client.write(late)
    client.write(late)  # a retry of a write that got through

    early = [TimeSeries(late[0].labels, [(t0 * 1000, 1.0)])]
    with pytest.raises(PermanentError, match="HTTP 400"):
        client.write(early)  # out of order for that series: retrying cannot help
    key = _labels(__name__="ALERTS", alertname="GpuIdle", alertstate="firing")
    assert _query(prom.url, "ALERTS", t0 + 60) == {key: "1"}


def test_many_series_across_several_requests(prometheus: PrometheusFactory) -> None:
    prom = prometheus()
    client = RemoteWriteClient(
        HttpClientConfig(f"{prom.url}/api/v1/write", timeout=10), max_samples_per_request=7
    )
    t0 = _recent_minute()
    alerts = [
        ActiveAlertSample({"alertname": "GpuIdle", "gpu": str(i)}, AlertState.FIRING, t0 - i)
        for i in range(25)
    ]

    client.write(build_alert_series(alerts, t0 * 1000))

    values = _query(prom.url, "ALERTS_FOR_STATE", t0)
    assert len(values) == 25
    assert values[_labels(__name__="ALERTS_FOR_STATE", alertname="GpuIdle", gpu="7")] == str(t0 - 7)
    assert _query(prom.url, "count(ALERTS)", t0) == {(): "25"}
