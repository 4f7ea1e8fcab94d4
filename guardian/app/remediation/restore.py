"""Restore a reclaimed workload: ``guardian restore NAMESPACE/KIND/NAME``.

The restore is one more ladder step on the loop's own path (step_runner.py): read
the workload, apply through the executor (which also posts the Event), retry a 409
after reading again, and record the outcome in the ledger.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from guardian.adapters.kube.credentials import api_access, load_api_client
from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.build import command_credentials, state_database
from guardian.app.remediation.metrics import RemediationMetrics
from guardian.app.remediation.recording import StepRecorder
from guardian.app.remediation.step_runner import Ready, StepRunner
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.reclaim import PlannedAction
from guardian.model.remediation_events import LadderStep, WorkloadRef
from guardian_common.errors import ConfigError, PermanentError


@dataclass(frozen=True)
class RestoreRequest:
    target: str  # NAMESPACE/KIND/NAME, KIND as kubectl accepts it
    kubeconfig: str | None  # None: the config's, else in-cluster, $KUBECONFIG, ~/.kube/config
    state: str | None = None  # the state database to record in
    config: str | None = None  # else the state_path of this controller config
    dry_run: bool = False
    context: str | None = None  # kubeconfig context


def parse_target(text: str, reader: KubeReader) -> WorkloadRef:
    parts = text.split("/")
    if len(parts) != 3 or not all(parts):
        raise ConfigError(f"expected NAMESPACE/KIND/NAME, got {text!r}", field="target")
    namespace, kind, name = parts
    api_version, kind = reader.find_kind(kind)
    return WorkloadRef(api_version, kind, namespace, name)


def restore_workload(
    ref: WorkloadRef,
    reader: KubeReader,
    steps: StepRunner,
    now: float,
    *,
    dry_run: bool = False,
    who: str = "guardian restore",
) -> str:
    """Restore ``ref``: exact replicas, unsuspend, clear our annotations, start a warm-up.
    Returns what was done; raises PermanentError if ``ref`` was not reclaimed by us."""

    def check() -> Ready:
        ws = reader.workload(ref)
        if Annotations.RECLAIMED_AT not in ws.annotations:
            raise PermanentError(
                f"{ref} was not reclaimed by gpu-guardian (no {Annotations.RECLAIMED_AT} "
                "annotation); nothing to restore"
            )
        action = PlannedAction(
            ref,
            LadderStep.RESTORE,
            ws.annotations.get(Annotations.RECLAIMED_BY, ""),
            ws.annotations.get(Annotations.EPISODE, ""),
            f"requested by {who}",
            dry_run,
            LabelSet(),
        )
        return action, ws

    return steps.run(check, now).done().message


@contextmanager
def restore_clients(
    request: RestoreRequest, env: Mapping[str, str]
) -> Iterator[tuple[KubeRest, KubeReader, StepRunner]]:
    """The clients a restore needs, closed afterwards; inside, an unreachable or forbidden
    API is one line and exit 2 (api_access)."""
    ledger: Ledger | None = None
    api_client: Any = None
    try:
        path = state_database(request.state, request.config, env)
        ledger = Ledger.open(path) if path else None
        credentials = command_credentials(request.kubeconfig, request.context, request.config, env)
        api_client = load_api_client(credentials, retries=0)
        rest = KubeRest(api_client)
        reader = KubeReader(rest)
        executor = Executor(rest, reader, instance="guardian-cli")
        steps = StepRunner(executor, StepRecorder(ledger, RemediationMetrics()))
        with api_access(api_client):
            yield rest, reader, steps
    finally:
        if api_client is not None:
            api_client.close()
        if ledger is not None:
            ledger.close()


def run_restore(
    request: RestoreRequest, env: Mapping[str, str], now: float
) -> tuple[WorkloadRef, str]:
    """Build the clients, restore, close them: (the workload, what was done)."""
    with restore_clients(request, env) as (_, reader, steps):
        ref = parse_target(request.target, reader)
        return ref, restore_workload(ref, reader, steps, now, dry_run=request.dry_run)
