"""The CustomResourceDefinitions of ClusterReclaimPolicy and ReclaimPolicy.

One structural OpenAPI v3 schema, built here next to the pydantic model it mirrors, so
that the API server rejects what the file loader rejects: unknown fields, wrong types,
enums, names and label keys, duration syntax; CEL rules (``x-kubernetes-validations``)
where a rule spans fields. What a schema cannot say (a timezone that does not exist, a
window whose end is not after its start, a duration over 100y) the controller checks
with the pydantic model and reports as ``Invalid`` in the object's status.

``guardian policies crd`` prints them; manifests/generate.py writes them under
manifests/base/crds/.
"""

from __future__ import annotations

from typing import Any

from guardian.model import policy_limits as limit
from guardian.model.openapi_schema import (
    Schema,
    boolean,
    duration,
    enum,
    obj,
    string,
    strings,
)
from guardian.model.policies import (
    ADVICE_REASON,
    CLUSTER_KIND,
    KIND,
    LABEL_KEY_PATTERN,
    RIGHT_SIZE_NEEDS_RECLAIM,
)
from guardian.model.policies_windows import WINDOW_PATTERN

GROUP = "gpu-guardian.io"
VERSION = "v1alpha1"

_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"

# The CEL rules, with the messages the file loader gives for the same mistakes.
# A team's ReclaimPolicy has no defaults (what it leaves out it inherits): has() first.
RULE_WARN_FIRST = "!has(self.notify) || self.notify || (has(self.reclaim) && !self.reclaim)"
RULE_RIGHT_SIZE = (
    "!has(self.partial) || self.partial != 'rightSize' || !has(self.ladder) || "
    "!has(self.ladder.reclaim) || self.ladder.reclaim"
)
RULE_SELECTOR_VALUES = (
    "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0)"
    " : (!has(self.values) || size(self.values) == 0)"
)
RULE_LABEL_KEYS = f"self.all(k, k.matches('{LABEL_KEY_PATTERN}'))"
RULE_NO_ADVICE = (
    "(!has(self.names) || !self.names.exists(n, n == 'GpuMemoryUnderutilized'))"
    " && (!has(self.matchLabels) || ("
    "(!('guardian_class' in self.matchLabels) || self.matchLabels['guardian_class'] != 'rightsize')"
    " && (!('alertname' in self.matchLabels)"
    " || self.matchLabels['alertname'] != 'GpuMemoryUnderutilized')))"
)


def _string_map(description: str, max_value: int, keys: bool = True) -> Schema:
    """Label keys (their pattern bounds their length) to values of at most ``max_value``."""
    out: Schema = {
        "type": "object",
        "maxProperties": limit.MAX_LABELS,
        "additionalProperties": {"type": "string", "maxLength": max_value},
        "description": description,
    }
    if keys:
        out["x-kubernetes-validations"] = [
            {"rule": RULE_LABEL_KEYS, "message": "invalid label key"}
        ]
    return out


def label_selector(description: str) -> Schema:
    requirement = obj(
        {
            "key": string(maxLength=limit.MAX_LABEL_KEY),
            "operator": {"type": "string", "enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
            "values": strings("For In and NotIn only.", limit.MAX_VALUES, limit.MAX_LABEL_VALUE),
        },
        required=["key", "operator"],
        rules=[
            {
                "rule": RULE_SELECTOR_VALUES,
                "message": "In and NotIn need values; Exists and DoesNotExist take none",
            }
        ],
    )
    return obj(
        {
            "matchLabels": _string_map("Labels that must all match.", limit.MAX_LABEL_VALUE),
            "matchExpressions": {
                "type": "array",
                "maxItems": limit.MAX_EXPRESSIONS,
                "items": requirement,
            },
        },
        description,
    )


_NAMESPACES = (limit.MAX_NAMESPACES, limit.MAX_NAME, _NAME_PATTERN)


def _ladder_schema() -> Schema:
    return obj(
        {
            "notify": boolean(True, "Notify at once (required when reclaim is true)."),
            "annotate": boolean(True, "Annotate the workload on the next cycle."),
            "gracePeriod": duration("1h", "Reclaim no sooner than this after the notification."),
            "reclaim": boolean(True, "false: warn only."),
            "reproveAfterOutage": duration(
                "0s",
                "After an outage of the evidence longer than this, reclaim only once the "
                "idle window has been seen again (0s: never).",
            ),
        },
        "notify → annotate → grace → reclaim.",
        default={},
        rules=[
            {
                "rule": RULE_WARN_FIRST,
                "message": "reclaim needs notify: true (we always warn before acting)",
            }
        ],
    )


def _alerts_schema() -> Schema:
    # Asking for right-sizing advice (GpuMemoryUnderutilized, guardian_class rightsize) is
    # refused by the API server (the CEL rule) and by the controller's validation, with
    # the file loader's words.
    return obj(
        {
            "names": strings(
                "Any of these alertnames (empty: any). Never GpuMemoryUnderutilized:"
                " right-sizing advice, which no policy acts on.",
                limit.MAX_ALERT_NAMES,
                limit.MAX_TEXT,
            ),
            "matchLabels": {
                **_string_map(
                    "And all of these labels. guardian_class rightsize (advice) is"
                    " refused; pipeline matches nothing.",
                    limit.MAX_TEXT,
                ),
                "default": {"guardian_class": "reclaimable"},
            },
        },
        "Which alerts start the ladder.",
        default={},
        rules=[{"rule": RULE_NO_ADVICE, "message": ADVICE_REASON}],
    )


def _scope_schema() -> Schema:
    return obj(
        {
            "namespaces": strings("Empty: every namespace.", *_NAMESPACES),
            "namespaceSelector": label_selector("On the Namespace's labels."),
            "workloadSelector": label_selector("On the workload's labels."),
            "kinds": strings(
                "Workload kinds (empty: every kind).", limit.MAX_KINDS, limit.MAX_NAME
            ),
        },
        "Empty fields match everything.",
        default={},
    )


def _limits_schema() -> Schema:
    return obj(
        {
            "perCycle": {"type": "integer", "minimum": 0, "default": 5},
            "perNamespacePerHour": {"type": "integer", "minimum": 0, "default": 10},
        },
        "Caps on reclaims.",
        default={},
    )


def _exclusions_schema() -> Schema:
    return obj(
        {
            "namespaces": strings("Never in these namespaces.", *_NAMESPACES),
            "workloadSelector": label_selector("Never workloads with these labels."),
        },
        default={},
    )


def _reclaim_schema() -> Schema:
    return obj(
        {
            "when": enum(("always", "demand"), "always", "demand: only while pods wait."),
            "pendingFor": duration("5m", "How long a pod must have been Pending."),
        },
        default={},
    )


def _checkpoint_schema() -> Schema:
    return obj(
        {
            "enabled": boolean(False, "Ask the workload to checkpoint before reclaiming."),
            "timeout": duration("15m", "How long to wait for the acknowledgement."),
            "onTimeout": enum(("reclaim", "giveUp"), "reclaim", "Without acknowledgement."),
        },
        default={},
    )


def spec_schema(cluster: bool) -> Schema:
    """The spec, one section builder per object field, in the fields' order."""
    props: dict[str, Schema] = {
        "priority": {"type": "integer", "default": 0, "description": "Precedence."},
        "mode": enum(("observe", "enforce"), "observe", "observe: plan and report only."),
        "alerts": _alerts_schema(),
        "scope": _scope_schema(),
        "ladder": _ladder_schema(),
        "warmup": duration("30m", "Minimum workload age, and quiet time after a restore."),
        "limits": _limits_schema(),
        "hpa": enum(("refuse", "record"), "refuse", "Workloads an HPA scales."),
        "allowPodDeletion": boolean(False, "Delete a bare pod (else annotate and notify only)."),
        "respectSilences": boolean(True, "No step while Alertmanager silences the alert."),
        "exclusions": _exclusions_schema(),
        "activeWindows": strings(
            "When the ladder may advance, e.g. 'Mon-Fri 07:30-20:30 Europe/Berlin'.",
            limit.MAX_WINDOWS,
            limit.MAX_WINDOW,
            pattern=WINDOW_PATTERN,
        ),
        "notifyOutsideWindows": boolean(True, "Notify even outside the active windows."),
        "reclaim": _reclaim_schema(),
        "checkpoint": _checkpoint_schema(),
        "partial": enum(
            ("notify", "rightSize"),
            "notify",
            "A partly idle workload: notify only, or remove exactly its idle replicas.",
        ),
    }
    if cluster:
        props["delegation"] = enum(
            ("none", "allow", "optIn"), "none", "What teams' ReclaimPolicies may do."
        )
    rules = [{"rule": RULE_RIGHT_SIZE, "message": RIGHT_SIZE_NEEDS_RECLAIM}]
    if not cluster:
        return obj(_without_defaults(props), INHERITS, rules=rules)
    return obj(props, default={}, rules=rules)


INHERITS = (
    "A field left out is inherited from the ClusterReclaimPolicy that delegates to this"
    " namespace (docs/policies.md, Delegation): the API server fills in no defaults."
)


def _without_defaults(schema: Any) -> Any:
    """``schema`` without its ``default`` values: a team's policy writes only what it
    changes, and the controller must see what was left out."""
    if isinstance(schema, dict):
        return {k: _without_defaults(v) for k, v in schema.items() if k != "default"}
    if isinstance(schema, list):
        return [_without_defaults(v) for v in schema]
    return schema


def status_schema() -> Schema:
    condition = obj(
        {
            "type": string(),
            "status": enum(("True", "False", "Unknown"), "Unknown", ""),
            "reason": string(),
            "message": string(),
            "observedGeneration": {"type": "integer"},
            "lastTransitionTime": string(format="date-time"),
        },
        required=["type", "status"],
    )
    candidate = obj(
        {
            "workload": string(),
            "action": string(),
            "at": string(),
            "reason": string(),
            "waitingFor": string(),
        }
    )
    return obj(
        {
            "observedGeneration": {"type": "integer"},
            "conditions": {
                "type": "array",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "matchedWorkloads": {"type": "integer"},
            "pendingSteps": {"type": "integer"},
            "reclaimed": {"type": "integer"},
            "lastAction": string(),
            "lastActionTime": string(),
            "candidates": {"type": "array", "items": candidate},
        }
    )


_READY = '.status.conditions[?(@.type=="Ready")].status'
PRINTER_COLUMNS = [
    {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
    {"name": "Matched", "type": "integer", "jsonPath": ".status.matchedWorkloads"},
    {"name": "Pending", "type": "integer", "jsonPath": ".status.pendingSteps"},
    {"name": "Reclaimed", "type": "integer", "jsonPath": ".status.reclaimed"},
    {"name": "Last Action", "type": "string", "jsonPath": ".status.lastAction"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def crd(cluster: bool) -> dict[str, Any]:
    kind = CLUSTER_KIND if cluster else KIND
    plural = kind.lower().removesuffix("y") + "ies"
    schema = obj(
        {
            "apiVersion": string(),
            "kind": string(),
            "metadata": {"type": "object"},
            "spec": spec_schema(cluster),
            "status": status_schema(),
        }
    )
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Cluster" if cluster else "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": ["crp"] if cluster else ["rp"],
                "categories": ["gpu-guardian"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": PRINTER_COLUMNS,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def crds() -> list[dict[str, Any]]:
    return [crd(cluster=True), crd(cluster=False)]
