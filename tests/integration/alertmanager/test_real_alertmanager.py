"""The client, the queue and the generated configuration against Debian's Alertmanager 0.25
(started by the `alertmanager` fixture on a free loopback port; no fake)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from guardian.adapters.alert_queue import NotificationQueue
from guardian.adapters.alertmanager import (
    AlertmanagerClient,
    AlertmanagerUnavailable,
    encode_alerts,
)
from guardian.app.alertmanager.config_render import RenderRequest, render_alertmanager_config
from guardian.app.alertmanager.metrics import AlertmanagerMetrics
from guardian.model.alertmanager_api import AlertStatus, PostableAlert, StoredAlert
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet
from testbed.alertmanager_server import LocalAlertmanager, check_config
from tests.plugins.alertmanager_fixture import AlertmanagerFactory

ROOT = Path(__file__).resolve().parents[3]
PACK = sorted(str(p) for p in (ROOT / "rules/guardian").glob("*.yaml"))


def client(am: LocalAlertmanager, timeout: float = 2.0) -> AlertmanagerClient:
    return AlertmanagerClient(HttpClientConfig(am.url, timeout=timeout))


def idle(
    pod: str,
    node: str = "n1",
    cluster: str = "c1",
    *,
    name: str = "GpuIdle",
    cls: str = "reclaimable",
) -> PostableAlert:
    now = time.time()
    labels = {
        "alertname": name,
        "guardian_class": cls,
        "severity": "warning",
        "cluster": cluster,
        "node": node,
        "namespace": "ml",
        "pod": pod,
    }
    return PostableAlert(
        LabelSet(labels), LabelSet({"summary": "idle"}), now - 60, now + 600, "http://g/graph"
    )


def down(**labels: str) -> PostableAlert:
    now = time.time()
    base = {"alertname": "GpuExporterDown", "guardian_class": "pipeline", "severity": "warning"}
    return PostableAlert(
        LabelSet({**base, **labels}), LabelSet(), now - 60, now + 600, "http://g/graph"
    )


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def by_pod(alerts: tuple[StoredAlert, ...]) -> dict[str, StoredAlert]:
    return {a.labels.get("pod", a.labels["alertname"]): a for a in alerts}


@pytest.mark.e2e
def test_post_list_and_a_silence_from_amtool(alertmanager: AlertmanagerFactory) -> None:
    am = alertmanager()
    api = client(am)
    api.post_alerts(
        b'[{"annotations":{"summary":"idle"},"endsAt":"2099-01-01T00:00:00.000Z",'
        b'"startsAt":"2020-01-01T00:00:00.000Z","generatorURL":"http://g/graph?g0.expr=up",'
        b'"labels":{"alertname":"GpuIdle","pod":"p-1"}}]'
    )
    silence = am.amtool(
        "silence", "add", "alertname=GpuIdle", "pod=p-1", "-d", "1h", "-c", "maint", "-a", "alice"
    ).strip()
    (alert,) = api.alerts(['alertname=~"GpuIdle"'])
    assert alert.state is AlertStatus.SUPPRESSED
    assert alert.silenced_by == (silence,)
    known = api.silences()[silence]
    assert (known.created_by, known.comment, known.state) == ("alice", "maint", "active")
    am.amtool("silence", "expire", silence)
    (alert,) = api.alerts(['alertname=~"GpuIdle"'])
    assert alert.state is AlertStatus.ACTIVE
    api.close()


@pytest.mark.e2e
def test_an_outage_loses_nothing_within_the_queue_and_counts_beyond(
    alertmanager: AlertmanagerFactory,
) -> None:
    am = alertmanager()
    api = client(am)
    metrics = AlertmanagerMetrics(capacity=5)
    queue = NotificationQueue([api], capacity=5, observer=metrics, max_backoff=0.2)
    queue.start()
    try:
        queue.send([idle("warm-0")])
        assert queue.wait_idle(10)

        am.stop()
        queue.send([idle(f"a-{i}") for i in range(3)])  # within the bound: kept
        assert not queue.wait_idle(1.0)
        assert metrics.errors_total.labels(api.name)._value.get() >= 1
        am.restart()
        assert queue.wait_idle(15)
        assert {"a-0", "a-1", "a-2"} <= set(by_pod(api.alerts()))
        assert metrics.dropped_total.labels("queue_full")._value.get() == 0

        am.stop()
        queue.send([idle(f"b-{i}") for i in range(8)])  # 3 past the bound: the oldest go
        time.sleep(0.5)
        am.restart()
        assert queue.wait_idle(15)
        pods = set(by_pod(api.alerts()))  # a restart forgets alerts: only what came after
        assert pods == {f"b-{i}" for i in range(3, 8)}
        assert metrics.dropped_total.labels("queue_full")._value.get() == 3
        assert metrics.sent_total.labels(api.name)._value.get() == 1 + 3 + 5
    finally:
        queue.stop()
        api.close()


@pytest.mark.e2e
def test_an_unreachable_alertmanager_is_transient(alertmanager: AlertmanagerFactory) -> None:
    am = alertmanager()
    api = client(am, timeout=1.0)
    am.stop()
    with pytest.raises(AlertmanagerUnavailable, match="cannot connect"):
        api.alerts()
    api.close()


def _generated(tmp_path: Path) -> Path:
    path = tmp_path / "alertmanager.yml"
    path.write_text(render_alertmanager_config(RenderRequest(files=PACK)), encoding="utf-8")
    return path


@pytest.mark.e2e
def test_the_generated_config_passes_amtool_check_config(tmp_path: Path) -> None:
    report = check_config(_generated(tmp_path))
    assert "SUCCESS" in report
    assert "4 inhibit rules" in report
    result = subprocess.run(
        ["amtool", "check-config", str(_generated(tmp_path))], capture_output=True, check=False
    )
    assert result.returncode == 0


@pytest.mark.e2e
def test_a_nodes_exporter_down_inhibits_gpuidle_on_that_node_only(
    alertmanager: AlertmanagerFactory, tmp_path: Path
) -> None:
    am = alertmanager(config=_generated(tmp_path).read_text(encoding="utf-8"))
    api = client(am)
    api.post_alerts(
        encode_alerts([idle("on-n1", "n1"), idle("on-n2", "n2"), idle("other", "n1", "c2")])
    )
    api.post_alerts(encode_alerts([down(cluster="c1", node="n1", reason="nvml_down")]))

    def inhibited() -> set[str]:
        return {p for p, a in by_pod(api.alerts(['alertname="GpuIdle"'])).items() if a.inhibited_by}

    # Inhibition by a just-posted source alert is asynchronous in 0.25: poll briefly.
    wait_for(lambda: inhibited() == {"on-n1"})
    alerts = by_pod(api.alerts())
    assert alerts["on-n1"].inhibited_by == (alerts["GpuExporterDown"].fingerprint,)
    assert alerts["on-n2"].state is AlertStatus.ACTIVE
    assert alerts["other"].state is AlertStatus.ACTIVE  # another cluster's node n1

    # A pipeline alert that names no node holds its whole cluster.
    api.post_alerts(encode_alerts([down(cluster="c1", job="gpu", instance="10.0.0.1:9400")]))
    wait_for(lambda: inhibited() == {"on-n1", "on-n2"})
    api.close()


@pytest.mark.e2e
def test_a_nodes_exporter_down_also_inhibits_violation_and_coverage_alerts_there(
    alertmanager: AlertmanagerFactory, tmp_path: Path
) -> None:
    am = alertmanager(config=_generated(tmp_path).read_text(encoding="utf-8"))
    api = client(am)
    api.post_alerts(
        encode_alerts(
            [
                idle("rogue", "n1", name="GpuUnallocatedUse", cls="violation"),
                idle("mig-0", "n1", name="GpuActivityUnknown", cls="coverage"),
                idle("rogue-2", "n2", name="GpuUnallocatedUse", cls="violation"),
            ]
        )
    )
    api.post_alerts(
        encode_alerts(
            [
                down(cluster="c1", node="n1", reason="nvml_down"),
                down(alertname="GpuMetricsGap", cluster="c1", node="n1"),
            ]
        )
    )

    def inhibited() -> set[str]:
        return {
            a.labels.get("alertname", "") + "/" + a.labels.get("pod", "")
            for a in api.alerts()
            if a.inhibited_by
        }

    wait_for(lambda: inhibited() == {"GpuUnallocatedUse/rogue", "GpuActivityUnknown/mig-0"})
    # A pipeline alert never inhibits another one: both stay active.
    states = {a.labels.get("alertname"): a.state for a in api.alerts() if not a.labels.get("pod")}
    assert states == {"GpuExporterDown": AlertStatus.ACTIVE, "GpuMetricsGap": AlertStatus.ACTIVE}
    api.close()


@pytest.mark.e2e
def test_a_nodes_exporter_down_also_inhibits_memory_advice_there(
    alertmanager: AlertmanagerFactory, tmp_path: Path
) -> None:
    # GpuMemoryUnderutilized is advice (guardian_class rightsize), no longer waste; it is
    # read from the same exporter, so a pipeline alert on its node holds it as before.
    am = alertmanager(config=_generated(tmp_path).read_text(encoding="utf-8"))
    api = client(am)
    api.post_alerts(
        encode_alerts(
            [
                idle("small-0", "n1", name="GpuMemoryUnderutilized", cls="rightsize"),
                idle("small-1", "n2", name="GpuMemoryUnderutilized", cls="rightsize"),
            ]
        )
    )
    api.post_alerts(encode_alerts([down(cluster="c1", node="n1", reason="nvml_down")]))

    def inhibited() -> set[str]:
        return {a.labels.get("pod", "") for a in api.alerts() if a.inhibited_by}

    wait_for(lambda: inhibited() == {"small-0"})
    assert by_pod(api.alerts())["small-1"].state is AlertStatus.ACTIVE
    api.close()
