"""``guardian simulate`` over a backfilled fleet history, against hand-computed answers.

Five hours of one-minute history, the shipped guardian pack's idle and pipeline groups,
and one policy (observe in its file, replayed as enforcing: grace 1h, no warm-up, the
namespace ``protected`` excluded). The idle group is evaluated at its slots
``T0 + m minutes + o`` (o: its slot offset), so ``slot(m)`` below is the first slot at or
after minute ``m``. GpuIdle needs 30 minutes of allocation and idleness, then ``for: 5m``.

- ``ml/idle-notebook`` (A100, idle throughout): pending at slot(30), firing slot(35):
  notified then, annotated at slot(36), reclaimed one grace period after the notice,
  slot(95). Never busy again: it frees every minute from slot(95) to the end, 205
  minutes, 3.4167 GPU-hours, $8.54 at $2.50/h.
- ``ml/regret-train`` (A100, idle, busy from minute 230): the same steps, then busy at
  slot(230): regret, restored there; freed 135 minutes, 2.25 GPU-hours, $5.63.
- ``protected/excluded-eval`` (H100, idle throughout): GpuIdle fires, no step: excluded.
- ``ml/gappy`` (A100, from minute 60, idle): notified slot(95), annotated slot(96); its
  node's exporter is gone from minute 120 to 260 (a gap): the pipeline alerts hold it
  from the first cycle after its last success is over 120 s old (slot(121) or slot(122),
  by the groups' slot offsets), its GpuIdle ends at slot(124) (no allocation for 5
  minutes) and the episode closes before the reclaim due at slot(155).
  After the gap the allocation must be 30 minutes old again: pending slot(290), notified slot(295),
  annotated slot(296), and the range ends before its grace.
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
MINUTES = 300


def idle(_minute: int) -> float:
    return 0.01


def busy_from(start: int):
    return lambda minute: 0.8 if minute >= start else 0.01


def fleet() -> Fleet:
    n1 = [Gpu("n1", i, "A100" if i < 2 else "H100") for i in range(3)]
    n2 = [Gpu("n2", i, "A100") for i in range(2)]
    return Fleet(
        minutes=MINUTES + 1,
        gpus=n1 + n2,
        pods=[
            Pod("ml", "idle-notebook-7d9f8c6b5-x2x4z", n1[0], "team-a", 0, 10_000, idle),
            Pod("ml", "regret-train-5f6d7c8b9-q9w8v", n1[1], "team-a", 0, 10_000, busy_from(230)),
            Pod("protected", "excluded-eval-6c7b8d9f5-k2l4m", n1[2], "team-b", 0, 10_000, idle),
            Pod("ml", "gappy-8b9c7d6f5-z2z4x", n2[0], "team-a", 60, 10_000, idle),
        ],
        gaps={"n2": [(120, 260)]},
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
  exclusions: {namespaces: [protected]}
"""


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory, prometheus_binaries):
    from guardian.adapters.local_prometheus import PrometheusOptions, start_prometheus

    work = tmp_path_factory.mktemp("simulate")
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
            prices: {{per_model: {{A100: 2.5, H100: 4.0}}}}
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


def test_would_be_steps_are_exactly_the_hand_computed_ones(simulated) -> None:
    result, slot, _config = simulated
    steps = [(s.at, str(s.workload), s.step.value) for s in result.steps]
    a, b, d = (
        "ml/Deployment/idle-notebook",
        "ml/Deployment/regret-train",
        "ml/Deployment/gappy",
    )
    assert steps == [
        (slot(35), a, "notify"),
        (slot(35), b, "notify"),
        (slot(36), a, "annotate"),
        (slot(36), b, "annotate"),
        (slot(95), d, "notify"),
        (slot(95), a, "reclaim"),
        (slot(95), b, "reclaim"),
        (slot(96), d, "annotate"),
        (slot(295), d, "notify"),
        (slot(296), d, "annotate"),
    ]
    assert result.restores == [(slot(230), b)]


def test_freed_gpu_hours_cost_and_regret(simulated) -> None:
    result, slot, _config = simulated
    by_name = {r.step.workload.name: r for r in result.reclaims}
    notebook, train = by_name["idle-notebook"], by_name["regret-train"]
    assert notebook.restored_at is None
    assert not notebook.regret
    assert notebook.freed.gpu_hours == pytest.approx(205 / 60)
    assert notebook.freed.cost == pytest.approx(205 / 60 * 2.5)
    assert train.restored_at == slot(230)
    assert train.regret
    assert train.freed.gpu_hours == pytest.approx(135 / 60)
    assert train.freed.cost == pytest.approx(135 / 60 * 2.5)
    totals = render_json(result)["totals"]
    assert totals["freed_gpu_hours"] == pytest.approx(340 / 60, abs=1e-5)
    assert totals["cost"] == pytest.approx(340 / 60 * 2.5)
    assert (totals["reclaims"], totals["regret"], totals["notifications"]) == (2, 1, 4)


@pytest.fixture(scope="module")
def first_slot_after(simulated):
    """The first slot of a group strictly after a time. Groups' slot offsets hash the rule
    file's path, so which idle slot first sees a pipeline alert depends on the checkout."""
    _result, _slot, config = simulated
    groups = {g.name: g for g in compile_groups(load_settings(config, {}))}

    def first(group: str, after: float) -> float:
        slots = group_slots(groups[group], T0, T0 + MINUTES * 60)
        return next(s for s in slots if s > after * 1000) / 1000

    return first


def test_the_gap_holds_the_ladder_and_is_reported(simulated, first_slot_after) -> None:
    result, slot, _config = simulated
    gappy = [h for h in result.holds if h.workload and h.workload.name == "gappy"]
    assert gappy, "the gap on n2 must hold gappy's ladder"
    assert all("missing data is not idleness" in h.reason and "node n2" in h.reason for h in gappy)
    # The last success (minute 119) is over 120 s old at the first pipeline slot after
    # minute 121: GpuExporterStale is pending from there, and the hold starts at the next
    # remediation cycle (an idle-group slot). GpuIdle ends at slot(124), when the
    # allocation is 5 minutes gone.
    stale = first_slot_after("guardian-gpu-pipeline", T0 + 119 * 60 + 120)
    assert min(h.start for h in gappy) == first_slot_after("guardian-gpu-idle", stale - 0.001)
    assert slot(121) <= min(h.start for h in gappy) <= slot(122)
    assert max(h.end for h in gappy) == slot(123)
    text = render_text(result)
    assert "held a workload's ladder" in text
    assert "ml/Deployment/gappy" in text


def test_the_excluded_workload_gets_no_step_and_says_why(simulated) -> None:
    result, _slot, _config = simulated
    assert result.fired["GpuIdle"] >= 4
    assert not [s for s in result.steps if s.workload.namespace == "protected"]
    refusals = [r for r in result.refusals if r.workload and r.workload.namespace == "protected"]
    assert refusals
    assert refusals[0].reason == "policy idle-gpus excludes namespace protected"


def test_the_report_names_the_source_of_identities_and_the_modes(simulated) -> None:
    result, _slot, _config = simulated
    out = render_json(result)
    assert "series alone" in out["workloads_source"]
    assert out["policies"][0]["mode_in_file"] == "observe"
    assert out["since"] == rfc3339(T0)
    json.dumps(out)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "guardian", "simulate", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_the_command_gives_the_same_answer_as_json_with_progress_lines(simulated) -> None:
    result, _slot, config = simulated
    span = ["--since", rfc3339(T0), "--until", str(T0 + MINUTES * 60), "--chunk", "2h"]

    run = _cli("--config", str(config), *span, "--json", "--progress", "lines")

    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == render_json(result) | {"queries": result.queries}
    assert "simulate: 3/3 chunk 3/3 (2023-11-15T04:00:00Z to 2023-11-15T05:00:00Z)" in run.stderr


def test_an_unreachable_prometheus_fails_naming_the_chunk(tmp_path: Path) -> None:
    config = tmp_path / "guardian.yaml"
    config.write_text(
        f'prometheus: {{url: "http://127.0.0.1:9", timeout: 2s}}\n'
        f'rule_files: ["{REPO}/rules/guardian/idle.yaml"]\n',
        encoding="utf-8",
    )

    run = _cli("--config", str(config), "--since", "1h", "--until", str(T0), "--progress", "none")

    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("guardian simulate: chunk 1/1 (2023-11-14T23:00:")
    assert "failed for rule GpuIdle of group guardian-gpu-idle: cannot reach" in last


def test_bad_flags_are_usage_errors(tmp_path: Path) -> None:
    assert _cli("--since", "1h").returncode == 2  # no config
    config = tmp_path / "g.yaml"
    config.write_text("prometheus: {url: 'http://x'}\nrule_files: [r.yaml]\n", encoding="utf-8")
    bad = _cli("--config", str(config), "--horizon", "soon")
    assert bad.returncode == 2
    assert "--horizon" in bad.stderr
