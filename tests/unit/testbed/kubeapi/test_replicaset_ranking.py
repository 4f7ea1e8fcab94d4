"""The ReplicaSet controller's scale-down order as the test bed plays it: Kubernetes'
``ActivePodsWithRanks.Less`` criteria in precedence (what a right-size relies on)."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.kubeapi.replicaset import COST, deletion_order


def pod(
    name: str,
    *,
    node: str = "n1",
    phase: str = "Running",
    ready: bool = True,
    cost: int | None = None,
    created: str = "2023-11-14T00:00:00Z",
    restarts: int = 0,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "creationTimestamp": created}
    if cost is not None:
        meta["annotations"] = {COST: str(cost)}
    return {
        "metadata": meta,
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [{"restartCount": restarts}],
        },
    }


CASES = [
    ("unscheduled first", [pod("a"), pod("b", node="")], ["b", "a"]),
    ("Pending before Running", [pod("a"), pod("b", phase="Pending")], ["b", "a"]),
    ("Unknown before Running", [pod("a"), pod("b", phase="Unknown")], ["b", "a"]),
    ("not Ready before Ready", [pod("a"), pod("b", ready=False)], ["b", "a"]),
    ("a lower cost first", [pod("a", cost=5), pod("b")], ["b", "a"]),
    ("cost before colocation", [pod("a", cost=-1, node="n2"), pod("b"), pod("c")], ["a", "b", "c"]),
    ("Ready wins over cost", [pod("a", cost=-9), pod("b", ready=False, cost=9)], ["b", "a"]),
    ("more pods on its node first", [pod("a", node="n2"), pod("b"), pod("c")], ["b", "c", "a"]),
    (
        "newer first",
        [pod("a"), pod("b", created="2023-11-15T00:00:00Z")],
        ["b", "a"],
    ),
]


@pytest.mark.parametrize(("pods", "order"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_deletion_order(pods: list[dict[str, Any]], order: list[str]) -> None:
    assert deletion_order(pods) == order
