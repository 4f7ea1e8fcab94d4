"""Issue #20's first "done when": real Prometheus + our engine + real Alertmanager.

Prometheus and the controller evaluate the same GpuIdle rule on the same data, on the same
slots, and both send to the same Alertmanager, each with its own external label `sender`
and the same alert_relabel_configs. Alertmanager's view of the two alerts is the same but
for `sender`: labels (relabelling included), annotations, startsAt and generatorURL. Then
the allocation ends, and the resolution reaches Alertmanager from both.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from guardian.adapters.local_prometheus import free_loopback_port
from guardian.model.times import parse_rfc3339
from testbed.feeds import series_with_idle_facts
from tests.plugins.alertmanager_fixture import AlertmanagerFactory

from .live import (
    RunningController,
    alertmanager_alerts,
    push,
    series,
    steps,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[3]
INTERVAL = 2  # seconds, the group's interval for both evaluators
ACTIVE_AFTER = 12.0  # seconds after the push: the last busy sample leaves the 30m window
ALLOCATED_UNTIL = 40.0  # seconds after the push: the allocation ends (the alert resolves)
RELABEL = [
    {"source_labels": ["pod"], "target_label": "shard", "modulus": 7, "action": "hashmod"},
    {"source_labels": ["namespace", "pod"], "separator": "/", "target_label": "workload"},
    {"regex": "container", "action": "labeldrop"},
]
GPU = {"cluster": "c1", "node": "n1", "uuid": "GPU-1", "gpu": "1"}
POD = {**GPU, "namespace": "ml", "pod": "train-0", "container": "main", "gpu_group": "a"}


def write_rule_file(path: Path) -> None:
    """The shipped GpuIdle, its expression as written, with a short `for` and interval (so
    the test takes a minute, not five)."""
    pack = yaml.safe_load((ROOT / "rules/guardian/idle.yaml").read_text(encoding="utf-8"))
    group = pack["groups"][0]
    group["interval"] = f"{INTERVAL}s"
    # The plain GpuIdle rule (not its no-process sibling or GpuActivityUnknown).
    (rule,) = [r for r in group["rules"] if r["alert"] == "GpuIdle" and "reason" not in r["labels"]]
    group["rules"] = [rule]
    rule["for"] = "4s"
    path.write_text(yaml.safe_dump(pack, sort_keys=False), encoding="utf-8")


def fleet(now: float) -> list[Any]:
    """45 minutes of history and the next minute: busy until 30m - ACTIVE_AFTER ago; the pod
    runs a process throughout, and the exporter's idle facts come with it."""
    times = steps(now - 45 * 60, now + 90, 5)
    busy_until = now - 30 * 60 + ACTIVE_AFTER
    raw = [
        series(
            "guardian_gpu_utilization_ratio", GPU, times, lambda t: 0.5 if t < busy_until else 0.0
        ),
        series(
            "guardian_pod_gpu_allocated",
            POD,
            times,
            lambda t: 1.0 if t < now + ALLOCATED_UNTIL else 0.0,
        ),
    ]
    return series_with_idle_facts(raw)


def idle_alerts(am_url: str) -> dict[str, dict[str, Any]]:
    return {
        a["labels"]["sender"]: a for a in alertmanager_alerts(am_url, filter='alertname="GpuIdle"')
    }


@pytest.mark.e2e
@pytest.mark.timeout(240)
def test_gpuidle_reaches_alertmanager_as_prometheus_sends_it(
    prometheus: Any, alertmanager: AlertmanagerFactory, tmp_path: Path
) -> None:
    am = alertmanager()
    rules = (tmp_path / "idle-parity.yaml").resolve()
    write_rule_file(rules)
    api_port = free_loopback_port()
    external_url = f"http://127.0.0.1:{api_port}"
    prom = prometheus(
        rule_files=[rules],
        evaluation_interval=f"{INTERVAL}s",
        external_labels={"sender": "prometheus"},
        alerting={
            "alert_relabel_configs": RELABEL,
            "alertmanagers": [{"static_configs": [{"targets": [am.url.split("//", 1)[1]]}]}],
        },
        extra_args=[f"--web.external-url={external_url}", "--rules.alert.resend-delay=1m"],
    )

    config = tmp_path / "guardian.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "prometheus": {"url": prom.url, "timeout": "10s"},
                "rule_files": [str(rules)],
                "state_path": str(tmp_path / "state.db"),
                "listen_address": f"127.0.0.1:{api_port}",
                "external_url": external_url,
                "external_labels": {"sender": "guardian"},
                "restore": {"from_prometheus": False},
                "reload": {"poll_interval": 0},
                "alertmanager": {
                    "alertmanagers": [{"url": am.url}],
                    "resend_delay": "1m",
                    "alert_relabel_configs": RELABEL,
                },
            }
        ),
        encoding="utf-8",
    )
    controller = RunningController.start(str(config))
    try:
        now = time.time()
        push(prom.url, fleet(now))
        both = wait_until(
            lambda: len(idle_alerts(am.url)) == 2 and idle_alerts(am.url), 60, "two GpuIdle alerts"
        )
        ours, theirs = both["guardian"], both["prometheus"]

        def without_sender(alert: dict[str, Any]) -> dict[str, str]:
            return {k: v for k, v in alert["labels"].items() if k != "sender"}

        assert without_sender(ours) == without_sender(theirs)
        assert ours["labels"]["workload"] == "ml/train-0"
        assert "container" not in ours["labels"]
        assert ours["annotations"] == theirs["annotations"]
        # The same slot, unless an evaluator missed one (a loaded machine): then, as in
        # Prometheus, the alert starts at the next slot it evaluated.
        late = _at(ours["startsAt"]) - _at(theirs["startsAt"])
        missed = _missed(controller) + _missed_by_prometheus(prom.url)
        if missed == 0:
            assert ours["startsAt"] == theirs["startsAt"]
        else:
            assert abs(late) <= missed * INTERVAL, (late, missed)
            assert late % INTERVAL == pytest.approx(0.0, abs=1e-3)
        # Both link the expression as Prometheus prints it (r.vector.String()), not as
        # written in the file: multi-line, with the file's spacing.
        assert ours["generatorURL"] == theirs["generatorURL"]
        assert ours["generatorURL"].startswith(f"{external_url}/graph?g0.expr=")

        # generatorURL points at our own API, which shows the rule and its alert.
        graph = requests.get(ours["generatorURL"], timeout=5).json()["data"]
        (rule,) = graph["rules"]
        assert rule["rule"] == "GpuIdle"
        assert [a["labels"]["pod"] for a in rule["alerts"]] == ["train-0"]

        # The allocation ends: both resolutions reach Alertmanager (it lists no resolved alert).
        wait_until(lambda: not idle_alerts(am.url), 60, "both alerts resolved")
        assert time.time() >= now + ALLOCATED_UNTIL
        metrics = controller.controller.alertmanager
        assert metrics is not None
        sent = metrics.metrics.sent_total.labels(am.url)._value.get()
        assert sent >= 2  # firing, then resolved
    finally:
        controller.stop()


GROUP = "guardian-gpu-idle"


def _at(text: str) -> float:
    at = parse_rfc3339(text)
    assert at is not None, text
    return at


def _missed(controller: RunningController) -> int:
    missed = controller.engine_parts.engine.metrics.iterations_missed.labels(GROUP)
    return int(missed._value.get())


def _missed_by_prometheus(url: str) -> int:
    text = requests.get(f"{url}/metrics", timeout=5).text
    lines = [
        line
        for line in text.splitlines()
        if line.startswith("prometheus_rule_group_iterations_missed_total{")
        and f';{GROUP}"' in line
    ]
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in lines)
