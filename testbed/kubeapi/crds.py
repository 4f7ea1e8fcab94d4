"""CustomResourceDefinitions: creating one serves its kind, with its schema and columns.

Create a ``apiextensions.k8s.io/v1`` CustomResourceDefinition (``kubectl apply -f``, or
``FakeKubeAPI.create``) and its served version appears in discovery, OpenAPI and the
resource paths, with the structural schema applied to every write (schema.py), the
``status`` subresource when declared, and ``additionalPrinterColumns`` in the Table
kubectl asks for (tables.py). Only the storage version is served. Deleting the CRD
stops serving the kind (its objects stay in the store, unreachable, as a test fake may).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed.kubeapi import errors
from testbed.kubeapi.resources import CrdInfo, ResourceRegistry, ResourceType
from testbed.kubeapi.schema import (
    FIELD_VALIDATION,
    Findings,
    apply_defaults,
    check,
    unknown_rules,
)

CRD_KIND = ("apiextensions.k8s.io", "CustomResourceDefinition")


def _served_version(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    versions = (crd.get("spec") or {}).get("versions") or []
    for version in versions:
        if version.get("storage"):
            return dict(version)
    raise errors.invalid(
        CRD_KIND[1],
        CRD_KIND[0],
        str((crd.get("metadata") or {}).get("name")),
        [("spec.versions", "Invalid value: must have exactly one version marked as storage")],
    )


def resource_from_crd(crd: Mapping[str, Any]) -> ResourceType:
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    version = _served_version(crd)
    schema = dict((version.get("schema") or {}).get("openAPIV3Schema") or {})
    rules = unknown_rules(schema)
    if rules:
        raise errors.ApiError(
            500, f"the fake API server cannot evaluate these CEL rules: {rules} (see cel.py)"
        )
    info = CrdInfo(schema, list(version.get("additionalPrinterColumns") or []))
    return ResourceType(
        str(spec.get("group", "")),
        str(version.get("name", "")),
        str(names.get("kind", "")),
        str(names.get("plural", "")),
        namespaced=spec.get("scope") == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        has_status="status" in (version.get("subresources") or {}),
        categories=tuple(names.get("categories") or ()),
        crd=info,
    )


def is_crd(rtype: ResourceType) -> bool:
    return (rtype.group, rtype.kind) == CRD_KIND


def on_crd_event(registry: ResourceRegistry, event_type: str, crd: Mapping[str, Any]) -> None:
    """Keep the served kinds in step with the stored CRDs."""
    wanted = resource_from_crd(crd)
    served = registry.find(wanted.group, wanted.version, wanted.plural)
    if event_type == "DELETED":
        if served is not None:
            registry.types.remove(served)
        return
    if served is None:
        registry.add(wanted)
    elif served.crd is not None and wanted.crd is not None:
        served.crd.schema = wanted.crd.schema
        served.crd.columns = wanted.crd.columns


def check_crd(crd: Mapping[str, Any]) -> None:
    """Refuse, before storing, a CRD the fake could not serve."""
    resource_from_crd(crd)


def validate_custom(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Default and check ``obj`` (in place) against its CRD's schema; raise 400/422."""
    info = rtype.crd
    if info is None:
        return
    schema = info.schema
    props = schema.get("properties") or {}
    findings = Findings()
    for key in list(obj):
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if key in props:
            obj[key] = apply_defaults(props[key], obj[key])
            obj[key] = check(props[key], obj[key], key, findings)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            findings.unknown.append(key)
            del obj[key]
    for key, child in props.items():
        if key not in obj and "default" in child and key != "status":
            obj[key] = apply_defaults(child, dict(child["default"]))
    if findings.unknown and FIELD_VALIDATION.get() == "Strict":
        unknown = ", ".join(f'unknown field "{f}"' for f in findings.unknown)
        raise errors.bad_request(f"strict decoding error: {unknown}")
    if findings.causes:
        name = str((obj.get("metadata") or {}).get("name") or "")
        raise errors.invalid(rtype.kind, rtype.group, name, findings.causes)
