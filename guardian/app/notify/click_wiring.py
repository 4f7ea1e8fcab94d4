"""The parts a click acts through: the remediation loop's own reader, executor, step
runner, ledger and shared state, plus the store of clicks every replica shares."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from guardian.adapters.kube.click_store import ClickStore
from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.journal import EpisodeJournal
from guardian.app.remediation.step_runner import StepRunner
from guardian.model.policies import ReclaimPolicy
from guardian.model.reclaim import FiringAlert


@dataclass(frozen=True)
class ClickWiring:
    """What a click acts through: the ladder's own parts."""

    store: ClickStore
    reader: KubeReader
    executor: Executor
    steps: StepRunner
    ledger: Ledger
    controller_namespace: str
    kill_switch: Callable[[], bool]  # the settings' switch
    is_leader: Callable[[], bool]
    journal: EpisodeJournal | None = None
    policies: Callable[[], Sequence[ReclaimPolicy]] = tuple
    dry_run: Callable[[], bool] = lambda: False
    # The engine's alerts now: Reclaim now needs the same whole-workload evidence as the
    # ladder (none given: it never reclaims).
    alerts: Callable[[], Sequence[FiringAlert]] = tuple
