"""``guardian simulate`` judges each reclaim on every pod the workload had, as the controller
does, and says "partly idle" where only part of it was idle.

Three hours of one-minute history, the shipped pack's idle and pipeline groups, one
policy (grace 1h, no warm-up). Every idle alert pends at slot(30), fires at slot(35)
(notify), the workload is annotated at slot(36) and its reclaim is due at slot(95):

- ``ml/web``: two replicas, one idle, one 90 % busy (the replay used to reclaim it and
  call it a regret at once). Partly idle from slot(95) to the end: 85 cycles; a
  right-size (the idle replica) frees its A100 for 85 minutes, 1.4167 GPU-hours.
- ``ml/big``: one pod holding 8 GPUs, one busy: 7 of its 8 GPUs idle, partly idle from
  slot(95): a right-size frees 7 GPUs x 85 minutes.
- ``ml/solo``: one idle replica: reclaimed at slot(95) as before, frees 85 minutes.
- ``ml/grow``: one idle replica, a second (idle too) added at minute 80: at slot(95) the
  new one has no alert yet, so the workload is partly idle; its own alert fires at
  slot(115), and then the whole workload is reclaimed. The right-size of the first
  replica counts from slot(95) to the reclaim: 20 minutes; the reclaim frees 2 GPUs x
  65 minutes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from guardian.adapters.openmetrics import render_openmetrics
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.rules.build import compile_groups
from guardian.app.settings.config_file import load_settings
from guardian.app.simulate.alert_timeline import group_slots
from guardian.app.simulate.printout import render_json, render_text
from guardian.app.simulate.simulation import Clients, SimulateOptions, Simulation
from guardian.model.http_client import HttpClientConfig
from guardian.model.times import rfc3339
from tests.integration.simulate.fleet import T0, Fleet, Gpu, Pod

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[3]
MINUTES = 180
WEB_IDLE, WEB_BUSY = "web-6c7b8d9f5-k2l4m", "web-6c7b8d9f5-p9q8r"


def idle(_minute: int) -> float:
    return 0.01


def busy(_minute: int) -> float:
    return 0.9


def fleet() -> Fleet:
    n1 = [Gpu("n1", i, "A100") for i in range(5)]
    n2 = [Gpu("n2", i, "A100") for i in range(8)]
    forever = 10_000
    return Fleet(
        minutes=MINUTES + 1,
        gpus=n1 + n2,
        pods=[
            Pod("ml", WEB_IDLE, n1[0], "team-a", 0, forever, idle),
            Pod("ml", WEB_BUSY, n1[1], "team-a", 0, forever, busy),
            Pod("ml", "solo-7d9f8c6b5-x2x4z", n1[2], "team-a", 0, forever, idle),
            Pod("ml", "grow-5f6d7c8b9-q9w8v", n1[3], "team-a", 0, forever, idle),
            Pod("ml", "grow-5f6d7c8b9-z2z4x", n1[4], "team-a", 80, forever, idle),
            *(
                Pod("ml", "big-0", gpu, "team-b", 0, forever, busy if gpu.index == 7 else idle)
                for gpu in n2
            ),
        ],
    )


POLICY = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: idle-gpus}
spec:
  mode: observe
  alerts: {names: [GpuIdle]}
  ladder: {gracePeriod: 1h}
  warmup: 0s
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory, prometheus_binaries):
    from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus

    work = tmp_path_factory.mktemp("simulate-partly")
    prom = start_prometheus(
        work / "prom",
        PrometheusOptions(openmetrics=render_openmetrics(fleet().samples())),
        binaries=prometheus_binaries,
    )
    try:
        (work / "policy.yaml").write_text(POLICY, encoding="utf-8")
        config = work / "guardian.yaml"
        config.write_text(
            textwrap.dedent(f"""\
            prometheus: {{url: "{prom.url}"}}
            rule_files: ["{REPO}/rules/guardian/idle.yaml", "{REPO}/rules/guardian/pipeline.yaml"]
            prices: {{per_model: {{A100: 2.5}}}}
            remediation: {{policy_files: [policy.yaml]}}
            """),
            encoding="utf-8",
        )
        settings = load_settings(config, {})
        querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=60)))
        options = SimulateOptions(since=T0, until=T0 + MINUTES * 60, chunk_seconds=7200.0)
        result = Simulation(settings, options, Clients(querier)).run()
        querier.close()
        idle_group = next(g for g in compile_groups(settings) if g.name == "guardian-gpu-idle")
        slots = group_slots(idle_group, T0, T0 + MINUTES * 60)

        def slot(minute: int) -> float:
            return next(s for s in slots if s >= (T0 + minute * 60) * 1000) / 1000

        yield result, slot, config
    finally:
        prom.stop()


def test_only_the_wholly_idle_workloads_are_reclaimed(simulated) -> None:
    result, slot, _config = simulated
    reclaims = {r.step.workload.name: r for r in result.reclaims}
    assert {name: r.step.at for name, r in reclaims.items()} == {
        "solo": slot(95),
        "grow": slot(115),
    }
    assert reclaims["grow"].step.reason.endswith("all 2 pods idle")
    assert all(r.restored_at is None and not r.regret for r in reclaims.values())
    assert reclaims["solo"].freed.gpu_hours == pytest.approx(85 / 60)
    assert reclaims["grow"].freed.gpu_hours == pytest.approx(2 * 65 / 60)


def test_partly_idle_workloads_name_their_parts_and_what_a_right_size_frees(simulated) -> None:
    result, slot, _config = simulated
    partly = {(p.run.workload.name, p.run.at): p for p in result.partly_idle}
    assert set(partly) == {("big", slot(95)), ("grow", slot(95)), ("web", slot(95))}
    web, big, grow = partly["web", slot(95)], partly["big", slot(95)], partly["grow", slot(95)]

    assert (web.run.last, web.run.cycles, web.busy_again) == (slot(179), 85, None)
    assert web.run.reason.startswith("partly idle, not reclaimed (1 of 2 pods idle")
    assert f"idle: {WEB_IDLE} (GPU idle)" in web.run.reason
    assert f"not idle: {WEB_BUSY} (busy or unknown: no idle alert)" in web.run.reason
    assert web.freed.gpu_hours == pytest.approx(85 / 60)
    assert web.freed.cost == pytest.approx(85 / 60 * 2.5)

    assert "big-0 (7 of its 8 GPUs idle)" in big.run.reason
    assert big.freed.gpu_hours == pytest.approx(7 * 85 / 60)

    assert (grow.run.last, grow.run.cycles) == (slot(114), 20)
    assert "grow-5f6d7c8b9-z2z4x (busy or unknown: no idle alert)" in grow.run.reason
    assert grow.freed.gpu_hours == pytest.approx(20 / 60)


def test_the_text_and_json_say_partly_idle(simulated) -> None:
    result, slot, _config = simulated
    text = render_text(result)
    assert "would-be reclaims: 2\n" in text
    assert "partly idle, not reclaimed: 3\n" in text
    assert (
        f"  {rfc3339(slot(95))} to {rfc3339(slot(179))} (85 cycles) ml/Deployment/web "
        "(policy idle-gpus): a right-size frees 1.4 GPU-hours, $3.54; "
        "not busy again before it ended\n"
        "      partly idle, not reclaimed (1 of 2 pods idle; "
        f"idle: {WEB_IDLE} (GPU idle); not idle: {WEB_BUSY} (busy or unknown: no idle alert))"
    ) in text
    assert "REGRET" not in text
    out = render_json(result)
    web = next(p for p in out["partly_idle"] if p["workload"] == "ml/Deployment/web")
    assert (web["pods"], web["idle_pods"]) == (2, 1)
    assert web["idle_part"] == [{"pod": WEB_IDLE, "gpus": None}]
    assert web["right_size_gpu_hours"] == pytest.approx(85 / 60, abs=1e-5)
    big = next(p for p in out["partly_idle"] if p["workload"] == "ml/StatefulSet/big")
    assert big["idle_part"] == [{"pod": "big-0", "gpus": [f"GPU-n2-{i}" for i in range(7)]}]
    totals = out["totals"]
    assert (totals["reclaims"], totals["regret"], totals["partly_idle"]) == (2, 0, 3)
    assert totals["right_size_gpu_hours"] == pytest.approx((85 + 7 * 85 + 20) / 60, abs=1e-5)
    json.dumps(out)


def test_the_command_prints_the_same(simulated) -> None:
    result, _slot, config = simulated
    span = ["--since", rfc3339(T0), "--until", str(T0 + MINUTES * 60), "--chunk", "2h"]
    run = subprocess.run(
        [sys.executable, "-m", "guardian", "simulate", "--config", str(config), *span, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == render_json(result) | {"queries": result.queries}
