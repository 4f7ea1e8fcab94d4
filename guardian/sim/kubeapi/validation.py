"""Object validation and defaulting: the subset of the API server's checks that clients rely on."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from guardian.sim.kubeapi.errors import invalid
from guardian.sim.kubeapi.resources import ResourceType

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")

# Kind -> dotted paths the real server requires (its 422 "Required value" errors).
REQUIRED_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): ("spec.containers",),
    ("", "Event"): ("involvedObject",),
    ("events.k8s.io", "Event"): (
        "eventTime",
        "reason",
        "action",
        "reportingController",
        "reportingInstance",
    ),
    ("apps", "Deployment"): ("spec.selector", "spec.template"),
    ("apps", "StatefulSet"): ("spec.selector", "spec.template"),
    ("apps", "ReplicaSet"): ("spec.selector",),
    ("batch", "Job"): ("spec.template",),
    ("batch", "CronJob"): ("spec.schedule", "spec.jobTemplate"),
    ("autoscaling", "HorizontalPodAutoscaler"): ("spec.scaleTargetRef", "spec.maxReplicas"),
}

# Kind -> (dotted path, default) pairs the server fills when absent.
DEFAULTS: dict[tuple[str, str], tuple[tuple[str, Any], ...]] = {
    ("apps", "Deployment"): (("spec.replicas", 1),),
    ("apps", "StatefulSet"): (("spec.replicas", 1),),
    ("apps", "ReplicaSet"): (("spec.replicas", 1),),
    ("batch", "Job"): (("spec.suspend", False),),
    ("batch", "CronJob"): (("spec.suspend", False),),
    ("", "Event"): (("count", 1), ("type", "Normal")),
}

_REPLICA_PATHS = ("spec.replicas",)


def _lookup(obj: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _set_default(obj: dict[str, Any], path: str, value: Any) -> None:
    node = obj
    parts = path.split(".")
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            if child is not None:
                return
            child = node[part] = {}
        node = child
    node.setdefault(parts[-1], value)


def apply_defaults(rtype: ResourceType, obj: dict[str, Any]) -> None:
    for path, value in DEFAULTS.get((rtype.group, rtype.kind), ()):
        _set_default(obj, path, value)
    if rtype.kind == "Namespace" and not rtype.group:
        obj.setdefault("status", {}).setdefault("phase", "Active")


def _check_string_map(field: str, value: Any, *, labels: bool) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, Mapping):
        return [(field, "must be a map of string keys to string values")]
    causes = []
    for key, item in value.items():
        if not isinstance(item, str):
            causes.append((f"{field}[{key}]", f"Invalid value: {item!r}: must be a string"))
            continue
        name = key.rsplit("/", 1)[-1]
        prefix = key.rsplit("/", 1)[0] if "/" in key else ""
        if not name or len(name) > 63 or not _LABEL_NAME.fullmatch(name):
            causes.append((f"{field}", f"Invalid value: {key!r}: name part must be a valid key"))
        elif prefix and not _DNS_SUBDOMAIN.fullmatch(prefix):
            causes.append((f"{field}", f"Invalid value: {key!r}: prefix must be a DNS subdomain"))
        if labels and (len(item) > 63 or not _LABEL_VALUE.fullmatch(item)):
            causes.append((f"{field}", f"Invalid value: {item!r}: a valid label value"))
    return causes


def validate(rtype: ResourceType, obj: Mapping[str, Any]) -> None:
    """Raise a 422 Invalid naming every offending field."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    causes: list[tuple[str, str]] = []
    pattern = _DNS_LABEL if rtype.kind == "Namespace" and not rtype.group else _DNS_SUBDOMAIN
    if not name:
        causes.append(("metadata.name", "Required value: name or generateName is required"))
    elif len(name) > 253 or not pattern.fullmatch(name):
        causes.append(("metadata.name", f"Invalid value: {name!r}: a lowercase RFC 1123 name"))
    causes += _check_string_map("metadata.labels", meta.get("labels"), labels=True)
    causes += _check_string_map("metadata.annotations", meta.get("annotations"), labels=False)
    for path in REQUIRED_FIELDS.get((rtype.group, rtype.kind), ()):
        present, value = _lookup(obj, path)
        if not present or value is None or value in ("", [], {}):
            causes.append((path, "Required value"))
    for path in _REPLICA_PATHS:
        present, value = _lookup(obj, path)
        if (
            present
            and value is not None
            and (not isinstance(value, int) or isinstance(value, bool) or value < 0)
        ):
            causes.append((path, f"Invalid value: {value!r}: must be greater than or equal to 0"))
    if causes:
        raise invalid(rtype.kind, rtype.group, name, causes)
