"""Checks the real server makes that our code could depend on: field types of Leases
(a wrong type is the Go decoder's 400), the 256 KiB annotation budget, and fields that
never change once set (a workload's selector)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from testbed.kubeapi.errors import bad_request, invalid
from testbed.kubeapi.resources import ResourceType

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # the apiserver's MaxRequestBodyBytes

_MICRO_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")
_GO_TYPES = {"int32": "number", "string": "string"}
_LEASE_SPEC = {
    "holderIdentity": "string",
    "leaseDurationSeconds": "int32",
    "acquireTime": "MicroTime",
    "renewTime": "MicroTime",
    "leaseTransitions": "int32",
    "preferredHolder": "string",
    "strategy": "string",
}
# Workload kinds whose spec.selector is immutable (apps/v1).
_SELECTOR_IMMUTABLE = {("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "ReplicaSet")}


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _lease(spec: Any) -> None:
    if spec is None:
        return
    if not isinstance(spec, Mapping):
        raise bad_request(
            f"json: cannot unmarshal {_json_kind(spec)} into Go struct field Lease.spec of "
            "type v1.LeaseSpec"
        )
    for name, go_type in _LEASE_SPEC.items():
        value = spec.get(name)
        if value is None:
            continue
        if go_type == "MicroTime":
            if not isinstance(value, str):
                raise bad_request(
                    f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                    f"LeaseSpec.spec.{name} of type string"
                )
            if not _MICRO_TIME.match(value):
                raise bad_request(
                    f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse'
                )
            continue
        ok = _json_kind(value) == _GO_TYPES[go_type]
        if go_type == "int32" and ok:
            ok = isinstance(value, int) and -(2**31) <= value < 2**31
        if not ok:
            raise bad_request(
                f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
                f"LeaseSpec.spec.{name} of type {go_type}"
            )
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        causes.append(
            ("spec.leaseDurationSeconds", f"Invalid value: {duration}: must be greater than 0")
        )
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        causes.append(
            (
                "spec.leaseTransitions",
                f"Invalid value: {transitions}: must be greater than or equal to 0",
            )
        )
    if causes:
        raise invalid("Lease", "coordination.k8s.io", "", causes)


def check_types(rtype: ResourceType, obj: Mapping[str, Any]) -> None:
    if (rtype.group, rtype.kind) == ("coordination.k8s.io", "Lease"):
        try:
            _lease(obj.get("spec"))
        except Exception as exc:
            name = str((obj.get("metadata") or {}).get("name") or "")
            if getattr(exc, "code", 0) == 422:
                details = getattr(exc, "details", None) or {}
                causes = [(c["field"], c["message"]) for c in details.get("causes", [])]
                raise invalid("Lease", "coordination.k8s.io", name, causes) from None
            raise


def annotation_size(annotations: Any) -> list[tuple[str, str]]:
    """ValidateAnnotations' budget: keys and values together at most 256 KiB."""
    if not isinstance(annotations, Mapping):
        return []
    total = sum(len(str(k)) + len(str(v)) for k, v in annotations.items())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        return [
            (
                "metadata.annotations",
                f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes",
            )
        ]
    return []


def _go_selector(selector: Any) -> str:
    """The selector as the Go server prints it in the immutable-field error."""
    labels = (selector or {}).get("matchLabels") or {}
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
    expressions = (selector or {}).get("matchExpressions")
    exprs = json.dumps(expressions) if expressions else "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:map[string]string{{{inner}}}, MatchExpressions:{exprs}}}"


def immutable_fields(
    rtype: ResourceType, current: Mapping[str, Any], new: Mapping[str, Any]
) -> None:
    if (rtype.group, rtype.kind) not in _SELECTOR_IMMUTABLE:
        return
    before = (current.get("spec") or {}).get("selector")
    after = (new.get("spec") or {}).get("selector")
    if before != after:
        name = str((new.get("metadata") or {}).get("name") or "")
        raise invalid(
            rtype.kind,
            rtype.group,
            name,
            [("spec.selector", f"Invalid value: {_go_selector(after)}: field is immutable")],
        )
