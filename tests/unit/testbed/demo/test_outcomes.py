"""The shared-GPU outcome: the idle pod notified, its busy neighbour untouched."""

from __future__ import annotations

from pathlib import Path

from testbed.demo.fleet import CHAT, SHARED_NOTEBOOK
from testbed.demo.observers import AlertObserver, KubeObserver, LedgerObserver
from testbed.demo.outcomes import Evidence, shared_idle_pod_notified
from testbed.demo.replay import ReplayRun, in_cluster_time


def _alert(name: str, pod: str, namespace: str) -> dict[str, str]:
    return {"alertname": name, "namespace": namespace, "pod": pod}


def _evidence(tmp_path: Path, *seen: tuple[dict[str, str], str]) -> Evidence:
    alerts = AlertObserver("http://unused")
    alerts.seen.extend(seen)
    kube = KubeObserver(None, [])  # type: ignore[arg-type]
    kube.history[(CHAT.namespace, CHAT.name)] = [(1, {})]
    return Evidence(alerts, LedgerObserver(tmp_path / "state.db"), kube, None, "C1", "i")


IDLE = _alert("GpuShareIdle", SHARED_NOTEBOOK.placements[0].pod, SHARED_NOTEBOOK.namespace)
BUSY = _alert("GpuShareIdle", CHAT.placements[0].pod, CHAT.namespace)


def test_the_idle_share_fired_and_the_neighbour_was_left_alone(tmp_path: Path) -> None:
    outcome = shared_idle_pod_notified(_evidence(tmp_path, (IDLE, "pending"), (IDLE, "firing")))
    assert outcome.ok is True, outcome.detail
    assert "GpuShareIdle fired 1x for notebook-bob" in outcome.detail


def test_nothing_fired(tmp_path: Path) -> None:
    assert shared_idle_pod_notified(_evidence(tmp_path)).ok is False


def test_an_alert_on_the_busy_neighbour_fails_it(tmp_path: Path) -> None:
    outcome = shared_idle_pod_notified(_evidence(tmp_path, (IDLE, "firing"), (BUSY, "pending")))
    assert outcome.ok is False
    assert "GpuShareIdle went 1x for chat-api" in outcome.detail


def test_the_ending_scales_the_replay_back_to_cluster_time() -> None:
    run = ReplayRun(
        0,
        "would-be reclaims: 1\n\nfreed: 0.006 GPU-hours, $0.02\n",
        0,
        "    idle cost: $0.13 of $0.70 GPU spend (18.8% of spend idle)\n",
    )
    lines = in_cluster_time(run, 60, 91.0)
    assert lines == [
        "The demo ran 1m31s at 60x a cluster's pace: 1h31m of cluster time.",
        "  the reclaim freed 0.36 GPU-hours, about $1.20 (simulate: 0.006 GPU-hours x 60)",
        "  the report found about $7.80 of $42.00 GPU spend idle",
    ]
