"""ReclaimPolicy documents: who is in scope, how the ladder runs, and what is never touched.

Pure data validated by pydantic (``extra="forbid"``); loading YAML with line numbers
is in :mod:`guardian.model.policies_load`. Everything defaults to the safe side: mode
``observe``, no pod deletion, HPAs refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from guardian.model import policy_limits as limit
from guardian.model.annotations import PREFIX as PREFIX
from guardian.model.annotations import Annotations as Annotations
from guardian_common.config_types import Bool, Duration, DurationOrZero, Int, StrictModel

API_VERSION = "gpu-guardian.io/v1alpha1"
KIND = "ReclaimPolicy"  # namespaced: a team's (in files without a namespace: cluster-wide)
CLUSTER_KIND = "ClusterReclaimPolicy"  # the platform admin's
KINDS = (CLUSTER_KIND, KIND)


NOTEBOOK_STOPPED = "kubeflow-resource-stopped"
RIGHT_SIZE_NEEDS_RECLAIM = "partial: rightSize needs ladder.reclaim: true (it is a reclaim)"
ALWAYS_EXCLUDED_NAMESPACES = ("kube-system",)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_KEY_PATTERN = _LABEL_KEY.pattern
"""A Kubernetes label key: an optional DNS prefix (253 bytes) and a name (63 bytes); also
the CRD's CEL rule on label maps."""


class Mode(StrEnum):
    OBSERVE = "observe"  # plan and report only
    ENFORCE = "enforce"


class HpaPolicy(StrEnum):
    REFUSE = "refuse"  # do not reclaim a workload an HPA scales
    RECORD = "record"  # record the HPA's minReplicas, scale to 0, restore both


class PartialAction(StrEnum):
    """What a policy does about a workload that is only partly idle."""

    NOTIFY = "notify"  # notify and annotate; never act
    RIGHT_SIZE = "rightSize"  # remove exactly the idle replicas where the kind allows it


class ReclaimWhen(StrEnum):
    ALWAYS = "always"  # an idle workload is reclaimed once the ladder allows it
    DEMAND = "demand"  # ... and only while pods that could use its GPUs wait (Pending)


class OnTimeout(StrEnum):
    RECLAIM = "reclaim"  # no acknowledgement in time: reclaim anyway
    GIVE_UP = "giveUp"  # no acknowledgement in time: do not reclaim this episode, say so


class Delegation(StrEnum):
    """What namespaced ReclaimPolicies may do under a ClusterReclaimPolicy."""

    NONE = "none"  # they have no effect
    ALLOW = "allow"  # the cluster policy acts; a team's policy may narrow it
    OPT_IN = "optIn"  # the cluster policy acts only where a team's policy opts in


class SelectorRequirement(StrictModel):
    key: limit.LabelKey
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[limit.LabelValue, ...] = Field(default=(), max_length=limit.MAX_VALUES)

    @model_validator(mode="after")
    def _values(self) -> SelectorRequirement:
        needs = self.operator in ("In", "NotIn")
        if needs and not self.values:
            raise ValueError(f"operator {self.operator} needs values")
        if not needs and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values


def _check_all(pattern: re.Pattern[str], values: Iterable[str], what: str) -> None:
    """ValueError for the first of ``values`` that ``pattern`` does not match."""
    for value in values:
        if not pattern.match(value):
            raise ValueError(f"invalid {what} {value!r}")


class LabelSelector(StrictModel):
    """A Kubernetes label selector; empty matches everything."""

    match_labels: dict[limit.LabelKey, limit.LabelValue] = Field(
        default_factory=dict, alias="matchLabels", max_length=limit.MAX_LABELS
    )
    match_expressions: tuple[SelectorRequirement, ...] = Field(
        default=(), alias="matchExpressions", max_length=limit.MAX_EXPRESSIONS
    )

    @field_validator("match_labels")
    @classmethod
    def _keys(cls, labels: dict[str, str]) -> dict[str, str]:
        _check_all(_LABEL_KEY, labels, "label key")
        return labels

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)


CLASS_LABEL = "guardian_class"
RECLAIMABLE = "reclaimable"  # waste: an idle GPU or share, what the default policy acts on
RIGHTSIZE = "rightsize"  # advice: the GPU is bigger than the workload needs
PIPELINE = "pipeline"  # the metrics pipeline's health: it holds the ladder, never starts it
# Classes no policy acts on, whatever its alerts section says. Low memory use means the
# GPU is too big, not unused: an inference server at 95 % SM with a small model fires
# GpuMemoryUnderutilized, and scaling it to 0 would take down a busy service. `violation`
# and `coverage` are not here: a policy that asks for them in matchLabels acts on them.
NEVER_ACTED_ON = (RIGHTSIZE, PIPELINE)
# The shipped packs' advice alerts (class rightsize), by name, so that one from an older
# rule file (still labelled reclaimable while an upgrade rolls out) is never acted on.
ADVICE_ALERTS = frozenset({"GpuMemoryUnderutilized"})
ADVICE_REASON = (
    "GpuMemoryUnderutilized is right-sizing advice (guardian_class: rightsize): "
    "no policy reclaims on it; it is notified on its own"
)


class AlertMatch(StrictModel):
    """Which alerts a policy acts on: any of ``names`` (empty: any) and all ``matchLabels``.
    Never an alert of a class in :data:`NEVER_ACTED_ON` or one of :data:`ADVICE_ALERTS`;
    asking for one is refused when the policy is loaded."""

    names: tuple[limit.Text, ...] = Field(default=(), max_length=limit.MAX_ALERT_NAMES)
    match_labels: dict[limit.LabelKey, limit.Text] = Field(
        default_factory=lambda: {CLASS_LABEL: RECLAIMABLE},
        alias="matchLabels",
        max_length=limit.MAX_LABELS,
    )

    @field_validator("names")
    @classmethod
    def _no_advice_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if any(name in ADVICE_ALERTS for name in names):
            raise ValueError(ADVICE_REASON)
        return names

    @field_validator("match_labels")
    @classmethod
    def _no_advice_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        # A pipeline class stays accepted, as it always was: it matches nothing.
        if labels.get(CLASS_LABEL) == RIGHTSIZE or labels.get("alertname") in ADVICE_ALERTS:
            raise ValueError(ADVICE_REASON)
        return labels

    def matches(self, labels: dict[str, str]) -> bool:
        if labels.get(CLASS_LABEL) in NEVER_ACTED_ON or labels.get("alertname") in ADVICE_ALERTS:
            return False
        if self.names and labels.get("alertname") not in self.names:
            return False
        return all(labels.get(k) == v for k, v in self.match_labels.items())


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Notebook", "Pod")


class Scope(StrictModel):
    namespaces: tuple[limit.Name, ...] = Field(default=(), max_length=limit.MAX_NAMESPACES)
    namespace_selector: LabelSelector = Field(default=LabelSelector(), alias="namespaceSelector")
    workload_selector: LabelSelector = Field(default=LabelSelector(), alias="workloadSelector")
    # Empty: every kind; other scalable kinds by their Kind name.
    kinds: tuple[limit.Name, ...] = Field(default=(), max_length=limit.MAX_KINDS)

    @field_validator("namespaces")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        _check_all(_NAME, names, "namespace name")
        return names

    @property
    def specificity(self) -> int:
        return (
            bool(self.namespaces)
            + (not self.namespace_selector.empty)
            + (not self.workload_selector.empty)
            + bool(self.kinds)
        )


class Ladder(StrictModel):
    """notify at once → annotate → wait ``gracePeriod`` after the notification → reclaim."""

    notify: Bool = True
    annotate: Bool = True
    grace_period: DurationOrZero = Field(default=3600.0, alias="gracePeriod")
    """Seconds between the notification and the reclaim (0: at once). 1h: time for the
    owner to answer before their workload is scaled down."""
    reclaim: Bool = True
    reprove_after_outage: DurationOrZero = Field(default=0.0, alias="reproveAfterOutage")
    """After its evidence could not be read for longer than this, a reclaim waits until
    the idle window has been seen again (0: never; a reclaim always waits for one
    healthy evaluation after an outage)."""

    @model_validator(mode="after")
    def _warn_first(self) -> Ladder:
        if self.reclaim and not self.notify:
            raise ValueError("reclaim needs notify: true (we always warn before acting)")
        return self


class Limits(StrictModel):
    """Blast-radius caps on reclaims (the disruptive step)."""

    per_cycle: Int = Field(default=5, ge=0, alias="perCycle")
    per_namespace_per_hour: Int = Field(default=10, ge=0, alias="perNamespacePerHour")


class ReclaimCondition(StrictModel):
    """When the reclaim step may run at all (``reclaim.when``)."""

    when: ReclaimWhen = ReclaimWhen.ALWAYS
    pending_for: DurationOrZero = Field(default=300.0, alias="pendingFor")
    """With ``when: demand``: how long a pod that could use the GPUs must have been
    Pending. 5m: longer than a scheduler retry, shorter than a grace period."""


class Checkpoint(StrictModel):
    """The checkpoint handshake: ask before reclaiming, wait for the acknowledgement."""

    enabled: Bool = False
    timeout: Duration = 900.0
    """Seconds to wait for ``checkpointed-at`` after ``reclaim-requested-at``. 15m: time
    for a training job to write a checkpoint."""
    on_timeout: OnTimeout = Field(default=OnTimeout.RECLAIM, alias="onTimeout")


class Exclusions(StrictModel):
    namespaces: tuple[limit.Name, ...] = Field(default=(), max_length=limit.MAX_NAMESPACES)
    workload_selector: LabelSelector | None = Field(default=None, alias="workloadSelector")


class PolicySpec(StrictModel):
    priority: Int = 0
    mode: Mode = Mode.OBSERVE
    alerts: AlertMatch = AlertMatch()
    scope: Scope = Scope()
    ladder: Ladder = Ladder()
    warmup: DurationOrZero = 1800.0
    """Seconds a workload must have existed, and must have been quiet after a restore,
    before it is acted on. 30m: as long as the shipped GpuIdle rule's window."""
    limits: Limits = Limits()
    hpa: HpaPolicy = HpaPolicy.REFUSE
    allow_pod_deletion: Bool = Field(default=False, alias="allowPodDeletion")
    exclusions: Exclusions = Exclusions()
    respect_silences: Bool = Field(default=True, alias="respectSilences")
    """Take no ladder step while the alert is silenced or inhibited in Alertmanager (or
    Alertmanager cannot say): an on-call who silences GpuIdle expects nothing reclaimed.
    Only with an ``alertmanager:`` section in the controller's config."""
    active_windows: tuple[limit.Window, ...] = Field(
        default=(), alias="activeWindows", max_length=limit.MAX_WINDOWS
    )
    """kube-downscaler's syntax, ``Mon-Fri 07:30-20:30 Europe/Berlin``; empty: always."""
    notify_outside_windows: Bool = Field(default=True, alias="notifyOutsideWindows")
    reclaim: ReclaimCondition = ReclaimCondition()
    checkpoint: Checkpoint = Checkpoint()
    delegation: Delegation = Delegation.NONE
    partial: PartialAction = PartialAction.NOTIFY
    """A partly idle workload: ``notify`` (the default) never acts on it; ``rightSize``
    scales a Deployment (or a StatefulSet whose idle pods are its highest ordinals) to
    its busy count so that exactly the idle replicas go; anything else gets advice."""

    @model_validator(mode="after")
    def _right_size_reclaims(self) -> PolicySpec:
        if self.partial is PartialAction.RIGHT_SIZE and not self.ladder.reclaim:
            raise ValueError(RIGHT_SIZE_NEEDS_RECLAIM)
        return self


class PolicyMeta(StrictModel):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"invalid name {name!r}: lower-case letters, digits, '-' and '.'")
        return name


class ReclaimPolicy(StrictModel):
    """A ClusterReclaimPolicy, or a ReclaimPolicy: namespaced (a team's) when it has a
    ``metadata.namespace``; in a file without one it is cluster-wide, as it always was."""

    api_version: Literal["gpu-guardian.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["ReclaimPolicy", "ClusterReclaimPolicy"]
    metadata: PolicyMeta
    spec: PolicySpec = PolicySpec()
    _source: str = PrivateAttr(default="")  # file:line, for reports
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)  # field path: line in its file

    @model_validator(mode="after")
    def _scoped(self) -> ReclaimPolicy:
        if self.kind == CLUSTER_KIND and self.metadata.namespace is not None:
            raise ValueError("a ClusterReclaimPolicy has no metadata.namespace")
        ns = self.metadata.namespace
        if ns is not None and not _NAME.match(ns):
            raise ValueError(f"invalid namespace {ns!r}")
        if ns is not None and self.spec.delegation is not Delegation.NONE:
            raise ValueError("spec.delegation: only a cluster policy delegates")
        return self

    @property
    def source(self) -> str:
        return self._source

    def located(self, source: str, lines: dict[str, int] | None = None) -> ReclaimPolicy:
        self._source, self._lines = source, dict(lines or {})
        return self

    def line_of(self, path: str) -> int | None:
        """The line of a field (``spec.ladder.gracePeriod``) in its file; None: not known."""
        return self._lines.get(path)

    @property
    def namespace(self) -> str | None:
        """The team's namespace of a namespaced policy; None for a cluster policy."""
        return self.metadata.namespace

    @property
    def name(self) -> str:
        """The identity in the ledger and annotations: ``ns/name`` for a team's policy."""
        ns = self.metadata.namespace
        return f"{ns}/{self.metadata.name}" if ns else self.metadata.name
