"""ReclaimPolicy documents: who is in scope, how the ladder runs, and what is never touched.

Pure data validated by pydantic (``extra="forbid"``); loading YAML with line numbers
is in :mod:`guardian.model.policies_load`. Everything defaults to the safe side: mode
``observe``, no pod deletion, HPAs refused.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator

from guardian_common.config_types import Bool, DurationOrZero, Int, StrictModel

API_VERSION = "gpu-guardian.io/v1alpha1"
KIND = "ReclaimPolicy"
PREFIX = "gpu-guardian.io/"


class Annotations:
    """Annotation keys, on workloads and namespaces. State lives on the object."""

    EXCLUDE = PREFIX + "exclude"
    EXCLUDE_UNTIL = PREFIX + "exclude-until"
    SNOOZE_UNTIL = PREFIX + "snooze-until"
    KILL_SWITCH = PREFIX + "kill-switch"  # on the controller's namespace
    # Written by the annotate step.
    FLAGGED_AT = PREFIX + "flagged-at"
    EPISODE = PREFIX + "episode"
    RULE = PREFIX + "rule"
    EVIDENCE = PREFIX + "evidence"
    PENDING_ACTION = PREFIX + "pending-action"
    PENDING_ACTION_AT = PREFIX + "pending-action-at"
    # Written by the reclaim step, in the same write as the scale.
    ORIGINAL_REPLICAS = PREFIX + "original-replicas"
    ORIGINAL_MIN_REPLICAS = PREFIX + "original-min-replicas"
    HPA = PREFIX + "hpa"
    SUSPENDED_JOBS = PREFIX + "suspended-jobs"  # a CronJob's running Jobs we suspended
    RECLAIMED_AT = PREFIX + "reclaimed-at"
    RECLAIMED_BY = PREFIX + "reclaimed-by"
    REASON = PREFIX + "reason"
    # Written by restore: the warm-up clock restarts from it.
    RESTORED_AT = PREFIX + "restored-at"

    FLAG_KEYS = (FLAGGED_AT, EPISODE, RULE, EVIDENCE, PENDING_ACTION, PENDING_ACTION_AT)
    RECLAIM_KEYS = (
        ORIGINAL_REPLICAS,
        ORIGINAL_MIN_REPLICAS,
        HPA,
        RECLAIMED_AT,
        RECLAIMED_BY,
        REASON,
    )


NOTEBOOK_STOPPED = "kubeflow-resource-stopped"
ALWAYS_EXCLUDED_NAMESPACES = ("kube-system",)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


class Mode(StrEnum):
    OBSERVE = "observe"  # plan and report only
    ENFORCE = "enforce"


class HpaPolicy(StrEnum):
    REFUSE = "refuse"  # do not reclaim a workload an HPA scales
    RECORD = "record"  # record the HPA's minReplicas, scale to 0, restore both


class SelectorRequirement(StrictModel):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

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


class LabelSelector(StrictModel):
    """A Kubernetes label selector; empty matches everything."""

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: tuple[SelectorRequirement, ...] = Field(default=(), alias="matchExpressions")

    @field_validator("match_labels")
    @classmethod
    def _keys(cls, labels: dict[str, str]) -> dict[str, str]:
        for key in labels:
            if not _LABEL_KEY.match(key):
                raise ValueError(f"invalid label key {key!r}")
        return labels

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        return all(req.matches(labels) for req in self.match_expressions)


class AlertMatch(StrictModel):
    """Which alerts a policy acts on: any of ``names`` (empty: any) and all ``matchLabels``."""

    names: tuple[str, ...] = ()
    match_labels: dict[str, str] = Field(
        default_factory=lambda: {"guardian_class": "reclaimable"}, alias="matchLabels"
    )

    def matches(self, labels: dict[str, str]) -> bool:
        if self.names and labels.get("alertname") not in self.names:
            return False
        return all(labels.get(k) == v for k, v in self.match_labels.items())


WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Notebook", "Pod")


class Scope(StrictModel):
    namespaces: tuple[str, ...] = ()  # empty: every namespace
    namespace_selector: LabelSelector = Field(default=LabelSelector(), alias="namespaceSelector")
    workload_selector: LabelSelector = Field(default=LabelSelector(), alias="workloadSelector")
    kinds: tuple[str, ...] = ()  # empty: every kind; other scalable kinds by their Kind name

    @field_validator("namespaces")
    @classmethod
    def _names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not _NAME.match(name):
                raise ValueError(f"invalid namespace name {name!r}")
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

    @model_validator(mode="after")
    def _warn_first(self) -> Ladder:
        if self.reclaim and not self.notify:
            raise ValueError("reclaim needs notify: true (we always warn before acting)")
        return self


class Limits(StrictModel):
    """Blast-radius caps on reclaims (the disruptive step)."""

    per_cycle: Int = Field(default=5, ge=0, alias="perCycle")
    per_namespace_per_hour: Int = Field(default=10, ge=0, alias="perNamespacePerHour")


class Exclusions(StrictModel):
    namespaces: tuple[str, ...] = ()
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


class PolicyMeta(StrictModel):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"invalid name {name!r}: lower-case letters, digits, '-' and '.'")
        return name


class ReclaimPolicy(StrictModel):
    api_version: Literal["gpu-guardian.io/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["ReclaimPolicy"]
    metadata: PolicyMeta
    spec: PolicySpec = PolicySpec()
    _source: str = PrivateAttr(default="")  # file:line, for reports

    @property
    def source(self) -> str:
        return self._source

    def located(self, source: str) -> ReclaimPolicy:
        self._source = source
        return self

    @property
    def name(self) -> str:
        return self.metadata.name
