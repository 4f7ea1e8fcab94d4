"""OpenAPI documents, enough for ``kubectl apply`` to validate.

kubectl (1.27+) reads ``/openapi/v3``, then the document of the object's group-version,
and looks for a PATCH operation of that kind that takes the ``fieldValidation``
parameter. Found: it sends ``fieldValidation=Strict`` and the server validates (here:
the CRD schemas, and our built-in checks). It falls back to ``/openapi/v2`` only when v3
is missing, and then wants protobuf, which this fake does not speak; ``/openapi/v2``
answers JSON with the same paths for clients that accept it. PATCH bodies are listed
as JSON merge patch only, so kubectl sends custom resources merge patches; for a
built-in kind it then computes a strategic merge patch from its compiled-in Go types
(the merge keys this document does not describe), which strategic_patch.py applies.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from testbed.kubeapi.resources import VERSION_INFO, ResourceRegistry, ResourceType

_PARAMS = ("fieldValidation", "fieldManager", "dryRun", "pretty")


def _gv_path(rtype: ResourceType) -> str:
    return f"api/{rtype.version}" if not rtype.group else f"apis/{rtype.group}/{rtype.version}"


def _gvk(rtype: ResourceType) -> dict[str, str]:
    return {"group": rtype.group, "version": rtype.version, "kind": rtype.kind}


def _schema_name(rtype: ResourceType) -> str:
    group = ".".join(reversed(rtype.group.split("."))) if rtype.group else "io.k8s.api.core"
    return f"{group}.{rtype.version}.{rtype.kind}"


def _operations(rtype: ResourceType) -> dict[str, Any]:
    base = f"/{_gv_path(rtype)}"
    ns = "/namespaces/{namespace}" if rtype.namespaced else ""
    ref = {"$ref": f"#/components/schemas/{_schema_name(rtype)}"}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    params = [{"name": p, "in": "query", "schema": {"type": "string"}} for p in _PARAMS]
    body = {"content": {"application/json": {"schema": ref}}}
    merge = {"content": {"application/merge-patch+json": {"schema": {"type": "object"}}}}
    # kubectl looks for fieldValidation among the PATCH operation's own parameters.
    ext = {"x-kubernetes-group-version-kind": _gvk(rtype), "parameters": params}
    named = {
        "parameters": [*params, {"name": "name", "in": "path", "required": True}],
        "get": {**ext, "x-kubernetes-action": "get", "responses": ok},
        "put": {**ext, "x-kubernetes-action": "put", "requestBody": body, "responses": ok},
        "patch": {**ext, "x-kubernetes-action": "patch", "requestBody": merge, "responses": ok},
        "delete": {**ext, "x-kubernetes-action": "delete", "responses": ok},
    }
    collection = {
        "parameters": params,
        "get": {**ext, "x-kubernetes-action": "list", "responses": ok},
        "post": {**ext, "x-kubernetes-action": "post", "requestBody": body, "responses": ok},
    }
    paths = {f"{base}{ns}/{rtype.plural}": collection, f"{base}{ns}/{rtype.plural}/{{name}}": named}
    if rtype.has_status:
        status = {key: named[key] for key in ("parameters", "get", "put", "patch")}
        paths[f"{base}{ns}/{rtype.plural}/{{name}}/status"] = status
    return paths


def _component(rtype: ResourceType) -> dict[str, Any]:
    schema: dict[str, Any] = dict(rtype.crd.schema) if rtype.crd is not None else {}
    schema.setdefault("type", "object")
    if rtype.crd is None:
        schema["x-kubernetes-preserve-unknown-fields"] = True  # built-ins: not described
    schema["x-kubernetes-group-version-kind"] = [_gvk(rtype)]
    return schema


def group_versions(registry: ResourceRegistry) -> dict[str, list[ResourceType]]:
    found: dict[str, list[ResourceType]] = {}
    for rtype in list(registry.types):
        found.setdefault(_gv_path(rtype), []).append(rtype)
    return found


def v3_document(registry: ResourceRegistry, gv_path: str) -> dict[str, Any] | None:
    served = group_versions(registry).get(gv_path)
    if not served:
        return None
    paths: dict[str, Any] = {}
    for rtype in served:
        paths.update(_operations(rtype))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {_schema_name(t): _component(t) for t in served}},
    }


def v3_root(registry: ResourceRegistry) -> dict[str, Any]:
    paths = {}
    for gv_path in group_versions(registry):
        document = v3_document(registry, gv_path)
        digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]
        paths[gv_path] = {"serverRelativeURL": f"/openapi/v3/{gv_path}?hash={digest.upper()}"}
    return {"paths": paths}


def v2_document(registry: ResourceRegistry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for gv_path in group_versions(registry):
        document = v3_document(registry, gv_path) or {}
        paths.update(document.get("paths", {}))
        definitions.update(document.get("components", {}).get("schemas", {}))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "definitions": definitions,
    }
