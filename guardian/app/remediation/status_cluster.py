"""``guardian status`` from the cluster: the shared episode state (the same answer on
every replica, or from anywhere with a kubeconfig) and, with ``--live``, the cluster as it
is now (the kill switch, each reclaimed workload's replicas), read with the standard
credentials."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from guardian.adapters.kube.credentials import (
    KubeAccessError,
    KubeCredentials,
    api_access,
    load_api_client,
)
from guardian.adapters.kube.episode_store import EpisodeStore
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest, NotFound
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.build import command_credentials, shared_store, state_database
from guardian.app.remediation.status import (
    StatusReport,
    build_status,
    read_status,
    shared_status,
)
from guardian.app.settings.config_file import load_settings
from guardian.app.settings.remediation import RemediationSettings
from guardian.model.policies import Annotations
from guardian.model.remediation_events import WorkloadRef
from guardian.model.shared_episode import SharedEpisode
from guardian_common.errors import ConfigError, GuardianError, TransientError
from guardian_common.words import plural


def read_episodes(rest: KubeRest, settings: RemediationSettings) -> list[SharedEpisode]:
    """Every shared episode, read now (on any replica, or from anywhere with a kubeconfig)."""
    store: EpisodeStore = shared_store(rest, settings)
    store.load()
    return store.episodes()


def read_cluster_status(
    settings: RemediationSettings, state: str | None, credentials: KubeCredentials
) -> StatusReport:
    """The report from the shared state in the cluster, with this replica's alerts (and
    refusals) if ``state`` exists."""
    api_client = load_api_client(credentials, retries=0)
    try:
        with api_access(api_client):  # unreachable or refused: one line, exit status 2
            episodes = read_episodes(KubeRest(api_client, timeout=settings.api_timeout), settings)
    except KubeAccessError:
        raise
    except GuardianError as exc:
        raise TransientError(
            f"cannot read the shared episode state in namespace "
            f"{settings.controller_namespace}: {exc}"
        ) from exc
    finally:
        api_client.close()
    if state is None or not Path(state).exists():
        return shared_status(episodes, [])
    ledger = Ledger.open(state)
    try:
        return build_status(ledger, episodes)
    finally:
        ledger.close()


def add_live(report: StatusReport, reader: KubeReader, controller_namespace: str) -> None:
    """The cluster as it is now: the kill switch and each reclaimed workload's state.
    API failures propagate (the caller turns them into one line)."""
    ns = reader.namespace(controller_namespace)
    switch = ns is not None and ns.annotations.get(Annotations.KILL_SWITCH, "") == "true"
    where = f"annotation {Annotations.KILL_SWITCH} on namespace {controller_namespace}"
    report.live = {
        "api": str(reader.rest.api_client.configuration.host),
        "kill_switch": f"on ({where})" if switch else f"off ({where} not true)",
    }
    for row, ref in zip(report.reclaimed, report.reclaimed_refs, strict=True):
        row["now"] = _workload_now(reader, ref)


def _workload_now(reader: KubeReader, ref: WorkloadRef) -> str:
    try:
        ws = reader.workload(ref)
    except NotFound:
        return "deleted"
    if ws.replicas is not None:
        state = plural(ws.replicas, "replica")
    else:
        state = "suspended" if ws.suspended else "running"
    marked = Annotations.RECLAIMED_AT in ws.annotations
    return f"{state}, {'still reclaimed' if marked else 'no longer marked reclaimed'}"


@dataclass(frozen=True)
class StatusRequest:
    state: str | None
    config: str | None
    live: bool = False  # also read the cluster
    kubeconfig: str | None = None
    context: str | None = None


def run_status(request: StatusRequest, env: Mapping[str, str]) -> StatusReport:
    """The report; with ``live`` (or a kubeconfig or context given) the cluster's part
    too. Credential and API failures raise KubeAccessError."""
    path = state_database(request.state, request.config, env)
    if path is None:
        raise ConfigError("give --config or --state")
    remediation = load_settings(request.config, env).remediation if request.config else None
    credentials = command_credentials(request.kubeconfig, request.context, request.config, env)
    if remediation is not None and remediation.enabled:  # the ladder as every replica sees it
        report = read_cluster_status(remediation, path, credentials)
    else:
        report = read_status(path)
    if not (request.live or request.kubeconfig or request.context):
        return report
    namespace = (remediation or RemediationSettings()).controller_namespace
    api_client = load_api_client(credentials, retries=0)
    try:
        with api_access(api_client):
            add_live(report, KubeReader(KubeRest(api_client)), namespace)
    finally:
        api_client.close()
    return report
