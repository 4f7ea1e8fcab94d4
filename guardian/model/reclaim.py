"""The planner's inputs and outputs: alerts, a cluster snapshot, the ledger's view, a plan.

All pure data; the adapters fill the snapshot and the ledger view, the planner turns
them into a plan, the executor applies it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from guardian.model.labels import LabelSet
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef

# How the planner's reason for a partly idle workload begins: the idle and the other
# parts follow (engine/remediation/evidence.py); Slack shows it on the parent message.
PARTLY_IDLE = "partly idle"


@dataclass(frozen=True, slots=True)
class FiringAlert:
    """An active alert as the engine holds it (pending or firing)."""

    labels: LabelSet
    active_at: float
    firing: bool
    group: str = ""
    value: float = 0.0
    window: float = 0.0  # seconds the rule's expression looks back (0: unknown)

    @property
    def alertname(self) -> str:
        return self.labels.get("alertname", "")


@dataclass(frozen=True, slots=True)
class GroupHealth:
    """The last evaluation of one rule group: only a healthy, recent one may be acted on."""

    group: str
    ts: float
    healthy: bool
    reason: str = ""


class ActionKind(StrEnum):
    """How a workload is reclaimed, decided by its root owner's kind."""

    SCALE = "scale"  # merge patch spec.replicas on a built-in (Deployment, StatefulSet, ...)
    SCALE_SUBRESOURCE = "scale-subresource"  # a custom kind with /scale (LeaderWorkerSet, ...)
    SUSPEND = "suspend"  # Job / CronJob spec.suspend
    NOTEBOOK = "notebook"  # Kubeflow kubeflow-resource-stopped annotation
    POD = "pod"  # a bare pod: annotate and notify; deletion only if a policy allows it
    NONE = "none"  # an owner we cannot stop: annotate and notify only


@dataclass(frozen=True, slots=True)
class HpaState:
    name: str
    min_replicas: int | None
    max_replicas: int | None


@dataclass(frozen=True, slots=True)
class MemberPod:
    """One pod of a root workload as read from the API: the planner's evidence must cover
    every GPU of every such pod before the whole workload is reclaimed."""

    name: str
    uid: str
    created_at: float  # creationTimestamp: evidence older than this is about another pod
    phase: str  # status.phase: Pending, Running, Succeeded, Failed, Unknown
    node: str = ""  # spec.nodeName ("" while unscheduled)
    deleting: bool = False  # metadata.deletionTimestamp is set: terminating
    gpus: Mapping[str, int] = field(default_factory=dict)  # GPU resource -> count it holds
    # What a ReplicaSet controller's scale-down ranks pods by (a right-size needs it).
    ready: bool = True  # the Ready condition is True
    deletion_cost: int | None = None  # controller.kubernetes.io/pod-deletion-cost, if set
    owner: str = ""  # its controller owner's name (a Deployment's pods: their ReplicaSet)

    @property
    def gpu_count(self) -> int:
        return sum(self.gpus.values())


@dataclass(frozen=True, slots=True)
class WorkloadState:
    """The root owner as last read: identity, version, labels, annotations, replicas."""

    ref: WorkloadRef
    uid: str
    resource_version: str
    created_at: float
    action: ActionKind
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    replicas: int | None = None  # None where the kind has no replica count
    suspended: bool = False
    plural: str = ""  # for /scale on custom kinds
    hpa: HpaState | None = None
    pods: tuple[str, ...] = ()  # the pods seen under this root (deduplicated)
    jobs: tuple[str, ...] = ()  # for a CronJob: its Jobs whose pods hold GPUs
    # Every pod the root owns now, read from the API; None: they could not be read, and
    # then nothing is reclaimed (the evidence cannot be shown to cover the workload).
    members: tuple[MemberPod, ...] | None = None


@dataclass(frozen=True, slots=True)
class NamespaceState:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PodOwner:
    """Where an alert's pod leads: its root, or why there is none."""

    namespace: str
    pod: str
    root: WorkloadRef | None
    error: str | None = None
    node: str | None = None  # the pod's spec.nodeName as read ("": unscheduled; None: unknown)
    uid: str | None = None  # the pod's metadata.uid as read (None: unknown)
    # Extended resources (nvidia.com/gpu, ...) its containers request: what it holds.
    requests: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` / ``matchFields`` entry of a node selector term."""

    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist, Gt, Lt (anything else matches nothing)
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A term of required node affinity: its expressions and fields are ANDed."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()  # only metadata.name is a node field


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""  # "" with operator Exists tolerates every taint
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # "" matches every effect


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True, slots=True)
class NodePod:
    """A pod bound to a node that is not terminal (Succeeded/Failed): what it requests
    there, as the scheduler counts it (engine/remediation/pod_facts.py)."""

    namespace: str
    name: str
    requests: Mapping[str, int] = field(default_factory=dict)  # resource -> amount


@dataclass(frozen=True, slots=True)
class NodeState:
    """A node as read: what the scheduler's filters compare a waiting pod against.
    Amounts are integers: ``cpu`` in millicores, every other resource in whole units
    (bytes, devices, pods), as engine/remediation/quantity.py reads them."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] = field(default_factory=dict)
    pods: tuple[NodePod, ...] = ()  # the non-terminal pods bound to it


@dataclass(frozen=True, slots=True)
class PendingPod:
    """A Pending pod that asks for extended resources (GPUs): demand for idle ones."""

    namespace: str
    name: str
    requests: Mapping[str, int]  # extended resource -> count, over its containers
    since: float  # creationTimestamp: how long it has been waiting
    # What the scheduler's filters compare (engine/remediation/scheduling.py); the
    # defaults ask for nothing more than ``requests``.
    node: str = ""  # spec.nodeName
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # Required node affinity's nodeSelectorTerms (ORed); None: the pod sets none.
    affinity: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    # Every resource it requests as the scheduler sums them (cpu in millicores, others
    # in whole units); extended resources missing here are taken from ``requests``.
    resources: Mapping[str, int] = field(default_factory=dict)

    def asks(self) -> dict[str, int]:
        """Resource -> the amount it needs on a node (``requests`` and ``resources``)."""
        return {**self.requests, **self.resources}


@dataclass(frozen=True)
class ClusterSnapshot:
    workloads: Mapping[WorkloadRef, WorkloadState]
    namespaces: Mapping[str, NamespaceState]
    pod_owners: Mapping[tuple[str, str], PodOwner]  # (namespace, pod) -> owner
    controller_namespace: str = "gpu-guardian"
    errors: tuple[str, ...] = ()  # what could not be read (the planner waits on these)
    # Pending pods asking for GPUs, from the informer; None: not known (not synced).
    pending_pods: tuple[PendingPod, ...] | None = None
    # The nodes the workloads' pods run on, read while pods wait (demand); a node that is
    # absent is unknown, and a pod is never taken to fit an unknown node.
    nodes: Mapping[str, NodeState] = field(default_factory=dict)
    node_errors: Mapping[str, str] = field(default_factory=dict)  # node -> why not read


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One recorded step."""

    episode: str
    workload: WorkloadRef
    step: LadderStep
    outcome: StepOutcome
    at: float
    policy: str
    dry_run: bool

    @classmethod
    def of(
        cls,
        episode: str,
        workload: WorkloadRef,
        step: LadderStep,
        outcome: StepOutcome,
        at: float,
        policy: str,
    ) -> LedgerEntry:
        """The entry for a recorded step: dry-run exactly when its outcome says so."""
        return cls(episode, workload, step, outcome, at, policy, outcome is StepOutcome.DRY_RUN)


@dataclass(frozen=True)
class LedgerView:
    """What the ledger knows that the planner needs: open episodes and recent steps."""

    open_episodes: Mapping[WorkloadRef, tuple[str, float, str]] = field(default_factory=dict)
    # workload -> (episode id, started at, policy)
    entries: tuple[LedgerEntry, ...] = ()
    # episode -> (since, resumed at or None): its last spell without evidence
    outages: Mapping[str, tuple[float, float | None]] = field(default_factory=dict)

    def steps(self, episode: str, *, real: bool) -> dict[LadderStep, float]:
        """When each step of ``episode`` was done: applied, or also dry-run if not ``real``."""
        done: dict[LadderStep, float] = {}
        ok = {StepOutcome.APPLIED} if real else {StepOutcome.APPLIED, StepOutcome.DRY_RUN}
        for entry in self.entries:
            if entry.episode == episode and entry.outcome in ok:
                done.setdefault(entry.step, entry.at)
        return done

    def reclaims_since(self, namespace: str, since: float, *, real: bool) -> int:
        ok = {StepOutcome.APPLIED} if real else {StepOutcome.APPLIED, StepOutcome.DRY_RUN}
        return sum(
            1
            for e in self.entries
            if e.step is LadderStep.RECLAIM
            and e.workload.namespace == namespace
            and e.at >= since
            and e.outcome in ok
        )


@dataclass(frozen=True, slots=True)
class RightSize:
    """Scale to ``keep`` replicas so that exactly ``remove`` (idle pods) go: each is given
    ``cost`` as its pod-deletion-cost first, lower than every pod that stays (None: the
    kind removes by ordinal, a StatefulSet)."""

    keep: int
    remove: tuple[str, ...]
    cost: int | None


@dataclass(frozen=True, slots=True)
class PlannedAction:
    """One step to take now (or, for GRACE, to record as pending), with its reason."""

    workload: WorkloadRef
    step: LadderStep
    policy: str
    episode: str
    reason: str
    dry_run: bool
    alert_labels: LabelSet
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    delete_pod: bool = False
    hpa_record: bool = False
    right_size: RightSize | None = None  # a reclaim of the idle replicas only

    @property
    def mutating(self) -> bool:
        return self.step in (
            LadderStep.ANNOTATE,
            LadderStep.CHECKPOINT,
            LadderStep.RECLAIM,
            LadderStep.RESTORE,
        )


@dataclass(frozen=True, slots=True)
class Wait:
    """A workload the planner did not act on this cycle, and why."""

    workload: WorkloadRef | None
    reason: str
    policy: str = ""
    episode: str = ""
    alert_labels: LabelSet = field(default_factory=LabelSet)
    refused: bool = True  # a guard said no (vs. simply not due yet)
    next_step: LadderStep | None = None
    next_step_due: float | None = None
    partly_idle: bool = False  # some of the workload is idle, not all: never a reclaim
    kind: HoldKind = HoldKind.GUARD  # what it waits for (status, the Slack thread)


@dataclass(frozen=True, slots=True)
class Check:
    """One gate the planner asked about one workload, in order, and its answer: what
    ``guardian explain`` shows (the planner's own reasons, not a second opinion)."""

    gate: str  # "policy", "exclusions", "evidence", "silences", "windows", "grace", ...
    passed: bool
    detail: str


@dataclass(frozen=True)
class Plan:
    now: float
    actions: tuple[PlannedAction, ...] = ()
    waits: tuple[Wait, ...] = ()
    closed_episodes: tuple[tuple[WorkloadRef, str], ...] = ()  # alerts gone, not reclaimed
    checks: Mapping[WorkloadRef, tuple[Check, ...]] = field(default_factory=dict)
