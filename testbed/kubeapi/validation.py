"""Object validation and defaulting: the subset of the API server's checks that clients rely on."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from testbed.kubeapi.api_rules import annotation_size, check_types, immutable_fields
from testbed.kubeapi.crds import check_crd, is_crd, validate_custom
from testbed.kubeapi.errors import bad_request, invalid
from testbed.kubeapi.resources import ResourceType

_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
# core.MaxSecretSize: a ConfigMap's data and binaryData together, in bytes.
MAX_CONFIG_MAP_BYTES = 1024 * 1024
_IMMUTABLE = "field is immutable when `immutable` is set"
_BAD_KEY = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
    "(e.g. 'key.name', or 'KEY_NAME', or 'key-name')"
)

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


def _config_map(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    """ValidateConfigMap: keys, no key in both maps, at most 1 MiB in all. A value that is
    not a string (or not base64 in binaryData) is a 400, as the server's decoder says."""
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    causes: list[tuple[str, str]] = []
    size = 0
    for field, values in (("data", data), ("binaryData", binary)):
        if not isinstance(values, Mapping):
            raise bad_request(f"json: cannot unmarshal {field} into Go struct field ConfigMap")
        for key, value in values.items():
            if not isinstance(value, str):
                raise bad_request(
                    f"json: cannot unmarshal {type(value).__name__} into Go struct field "
                    f"ConfigMap.{field} of type {'string' if field == 'data' else '[]uint8'}"
                )
            if len(key) > 253:
                causes.append(
                    (f"{field}[{key}]", "Invalid value: must be no more than 253 characters")
                )
            elif not _CONFIG_KEY.fullmatch(key):
                causes.append((f"{field}[{key}]", f"Invalid value: {key!r}: {_BAD_KEY}"))
            if field == "binaryData":
                try:
                    size += len(base64.b64decode(value, validate=True))
                except binascii.Error:
                    raise bad_request(
                        f"illegal base64 data in ConfigMap.binaryData[{key}]"
                    ) from None
            else:
                size += len(value.encode("utf-8"))
    causes += [
        (f"binaryData[{key}]", f"Invalid value: {key!r}: duplicate of key present in data")
        for key in sorted(set(data) & set(binary))
    ]
    if size > MAX_CONFIG_MAP_BYTES:
        causes.append(("", f"Too long: must have at most {MAX_CONFIG_MAP_BYTES} bytes"))
    return causes


def validate_update(
    rtype: ResourceType, current: Mapping[str, Any], new: Mapping[str, Any]
) -> None:
    """The checks that compare with the stored object: immutable fields (a workload's
    selector), and an immutable ConfigMap stays as it is."""
    immutable_fields(rtype, current, new)
    if (rtype.group, rtype.kind) != ("", "ConfigMap") or current.get("immutable") is not True:
        return
    causes = []
    if new.get("immutable") is not True:
        causes.append(("immutable", f"Forbidden: {_IMMUTABLE}"))
    causes += [
        (field, f"Forbidden: {_IMMUTABLE}")
        for field in ("data", "binaryData")
        if (new.get(field) or {}) != (current.get(field) or {})
    ]
    if causes:
        name = str((new.get("metadata") or {}).get("name") or "")
        raise invalid(rtype.kind, rtype.group, name, causes)


def validate(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Raise a 422 Invalid naming every offending field (a custom resource is also
    defaulted and pruned by its CRD's schema, in place)."""
    if is_crd(rtype):
        check_crd(obj)
    validate_custom(rtype, obj)
    check_types(rtype, obj)
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
    causes += annotation_size(meta.get("annotations"))
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
    if (rtype.group, rtype.kind) == ("", "ConfigMap"):
        causes += _config_map(obj)
    if causes:
        raise invalid(rtype.kind, rtype.group, name, causes)
