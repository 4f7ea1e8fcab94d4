"""What the rule engine is built with: small records of its collaborators, and the
shapes of the callables it takes (app/rules/runtime.py)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guardian.adapters.alert_store import AlertStore
from guardian.app.rules.restart_restore_gather import ForStateRestorer
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.fan_out import FanOut, in_order
from guardian.engine.rules.group_eval import CompiledGroup, GroupState
from guardian.engine.rules.restart_restore import RestorePolicy
from guardian.engine.rules.sharding import Sharding
from guardian.model.alerts import Alert, GroupEvaluation
from guardian.model.labels import LabelSet

if TYPE_CHECKING:  # the protobuf runtime only where remote write is configured
    from guardian.adapters.remote_write import RemoteWriteClient

Listener = Callable[[GroupEvaluation], None]
# Runs inside the group's state transaction: SQL only, no network.
TransactionWriter = Callable[[sqlite3.Connection], None]
# Two phases, so a component (e.g. an outbox) records the transitions atomically with
# the state that produced them: entered before the transaction (gather and plan; may
# read the network), its writer runs inside it, and it is left once it has ended.
TransactionHook = Callable[[GroupEvaluation], AbstractContextManager[TransactionWriter]]
# Instead of querying: the group's new state and evaluation from elsewhere (a ruler's
# /api/v1/rules with alerts.source: prometheus, app/rules/remote_source.py).
GroupEvaluator = Callable[
    [CompiledGroup, GroupState, float], tuple[dict[str, dict[LabelSet, Alert]], GroupEvaluation]
]


def _always() -> bool:
    return True


@dataclass(frozen=True)
class EvaluationSetup:
    """How each group is evaluated. ``fan_out`` runs a group's rules and template queries
    at once (a ThreadFanOut); ``sharding`` splits a rule's query into shards asked at
    once; ``evaluator`` takes the place of querying (remote_source.py)."""

    env: TemplateEnv = field(default_factory=lambda: TemplateEnv({}))
    monotonic: Callable[[], float] = time.monotonic
    fan_out: FanOut = in_order
    sharding: Sharding | None = None
    evaluator: GroupEvaluator | None = None


@dataclass(frozen=True)
class RestoreSetup:
    """How alert state comes back after a restart: ``from_prometheus`` restores the
    groups given to the engine (the first load) from ``ALERTS_FOR_STATE``, with ``clock``
    as the wall clock, as Prometheus does."""

    policy: RestorePolicy = field(default_factory=RestorePolicy)
    from_prometheus: ForStateRestorer | None = None
    clock: Callable[[], float] = time.time


@dataclass(frozen=True)
class EngineSinks:
    """Where an evaluation goes besides the engine's state. ``may_write``: whether this
    replica remote-writes now (the leader only)."""

    store: AlertStore | None = None
    remote_write: RemoteWriteClient | None = None
    listeners: Sequence[Listener] = ()
    transaction_hooks: Sequence[TransactionHook] = ()
    may_write: Callable[[], bool] = _always
