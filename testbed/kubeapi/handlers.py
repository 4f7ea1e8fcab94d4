"""The verbs: get, list, create, update, patch, delete and the scale subresource.

Each handler takes a parsed route and request and returns a :class:`Reply`,
or raises :class:`~testbed.kubeapi.errors.ApiError`. Watches are
streamed by :mod:`testbed.kubeapi.watch`; this module only decides that
a request is one.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from testbed.kubeapi import errors
from testbed.kubeapi.patch import apply_patch, require_patch_type
from testbed.kubeapi.resources import ResourceType, ScaleSpec
from testbed.kubeapi.selectors import compile_filter, field_value, selector_to_string
from testbed.kubeapi.store import Obj, Store
from testbed.kubeapi.urls import ResourceRoute

_TRUE = ("true", "1")
_ACCESS_REVIEW = ("authorization.k8s.io", "SelfSubjectAccessReview")


@dataclass(frozen=True)
class Request:
    method: str
    query: Mapping[str, str]
    content_type: str | None
    body: Any
    field_manager: str | None


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def verb_of(route: ResourceRoute, method: str, query: Mapping[str, str]) -> str:
    """The Kubernetes verb for a request (what RBAC and the request log call it)."""
    if method == "GET":
        if route.name is not None:
            return "get"
        return "watch" if query.get("watch", "").lower() in _TRUE else "list"
    named = {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    if route.name is not None and method in named:
        return named[method]
    if route.name is None and method == "POST":
        return "create"
    if route.name is None and method == "DELETE":
        return "deletecollection"
    raise errors.ApiError(405, f"the server does not allow this method ({method}) on this path")


def handle(store: Store, route: ResourceRoute, verb: str, request: Request) -> Reply:
    if route.rtype.namespaced and route.namespace is None and verb not in ("list", "watch"):
        raise errors.ApiError(404, "the server could not find the requested resource")
    dry_run = request.query.get("dryRun") == "All"
    if (route.rtype.group, route.rtype.kind) == _ACCESS_REVIEW:
        return _access_review(verb, request.body)
    if route.subresource == "scale":
        return _scale(store, route, verb, request, dry_run)
    if verb == "get":
        return Reply(200, store.get(route.rtype, route.scope_namespace, _name(route)))
    if verb == "list":
        return _list(store, route, request.query)
    if verb == "create":
        body = _object_body(route.rtype, request.body)
        created = store.create(
            route.rtype,
            route.scope_namespace,
            _check_namespace(route, body),
            dry_run=dry_run,
            manager=request.field_manager,
        )
        return Reply(201, created)
    if verb == "update":
        body = _check_namespace(route, _object_body(route.rtype, request.body))
        obj, was_created = store.put(
            route.rtype,
            route.scope_namespace,
            _name(route),
            body,
            subresource=route.subresource,
            dry_run=dry_run,
            manager=request.field_manager,
        )
        return Reply(201 if was_created else 200, obj)
    if verb == "patch":
        media = require_patch_type(route.rtype, request.content_type)

        def change(current: Obj) -> Obj:
            return apply_patch(media, current, request.body)

        patched = store.mutate(
            route.rtype,
            route.scope_namespace,
            _name(route),
            change,
            subresource=route.subresource,
            dry_run=dry_run,
            manager=request.field_manager,
        )
        return Reply(200, patched)
    if verb == "delete":
        return _delete(store, route, request, dry_run)
    if verb == "deletecollection":
        items, _ = store.list_objects(route.rtype, route.namespace, _filter(request.query))
        for item in items:
            name = item["metadata"]["name"]
            store.delete(route.rtype, item["metadata"].get("namespace", ""), name, dry_run=dry_run)
        return Reply(200, _list_body(route.rtype, items, store.resource_version, None))
    raise errors.ApiError(405, f"verb {verb} is not supported on {route.rtype.plural}")


def _access_review(verb: str, body: Any) -> Reply:
    """The fake has no RBAC: every access is allowed (``kubectl auth can-i`` says yes)."""
    if verb != "create":
        raise errors.ApiError(405, f"verb {verb} is not supported on selfsubjectaccessreviews")
    review = _object_body_of("authorization.k8s.io/v1", "SelfSubjectAccessReview", body)
    spec = review.get("spec")
    if not isinstance(spec, dict) or not (
        spec.get("resourceAttributes") or spec.get("nonResourceAttributes")
    ):
        raise errors.invalid(
            "SelfSubjectAccessReview",
            "authorization.k8s.io",
            "",
            [
                (
                    "spec.resourceAttributes",
                    (
                        "Invalid value: exactly one of nonResourceAttributes "
                        "or resourceAttributes must be specified"
                    ),
                )
            ],
        )
    review["status"] = {"allowed": True, "reason": "the fake API server has no RBAC"}
    review.setdefault("metadata", {})
    return Reply(201, review)


def _object_body_of(api_version: str, kind: str, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return {**body, "apiVersion": api_version, "kind": kind}


def _name(route: ResourceRoute) -> str:
    if route.name is None:  # verb_of gives named verbs only to named routes
        raise errors.ApiError(405, "this verb needs an object name in the path")
    return route.name


def _scale_spec(rtype: ResourceType) -> ScaleSpec:
    if rtype.scale is None:
        raise errors.ApiError(404, f"{rtype.plural} has no scale subresource")
    return rtype.scale


def _object_body(rtype: ResourceType, body: Any) -> Obj:
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if kind not in (None, "", rtype.kind) or api_version not in (None, "", rtype.api_version):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) and kind ({kind}) do not match the "
            f"expected {rtype.api_version} {rtype.kind}"
        )
    return body


def _check_namespace(route: ResourceRoute, body: Obj) -> Obj:
    given = (body.get("metadata") or {}).get("namespace")
    if route.rtype.namespaced and given not in (None, "", route.namespace):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    return body


def _filter(query: Mapping[str, str]) -> Any:
    return compile_filter(query.get("labelSelector"), query.get("fieldSelector"))


def _list(store: Store, route: ResourceRoute, query: Mapping[str, str]) -> Reply:
    items, rv = store.list_objects(route.rtype, route.namespace, _filter(query))
    start = _decode_continue(query.get("continue"))
    if start is not None:
        items = [i for i in items if _item_key(i) > start]
    token = None
    try:
        limit = int(query.get("limit") or 0)
    except ValueError as exc:
        raise errors.bad_request(f"limit must be an integer, not {query.get('limit')!r}") from exc
    if limit > 0 and len(items) > limit:
        remaining = len(items) - limit
        items = items[:limit]
        token = base64.urlsafe_b64encode(
            json.dumps({"start": list(_item_key(items[-1]))}).encode()
        ).decode()
        body = _list_body(route.rtype, items, rv, token)
        body["metadata"]["remainingItemCount"] = remaining
        return Reply(200, body)
    return Reply(200, _list_body(route.rtype, items, rv, token))


def _item_key(item: Obj) -> tuple[str, str]:
    meta = item["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _decode_continue(token: str | None) -> tuple[str, str] | None:
    if not token:
        return None
    try:
        start = json.loads(base64.urlsafe_b64decode(token.encode()))["start"]
        return str(start[0]), str(start[1])
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def _list_body(rtype: ResourceType, items: list[Obj], rv: int, token: str | None) -> Obj:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if token:
        meta["continue"] = token
    return {
        "kind": f"{rtype.kind}List",
        "apiVersion": rtype.api_version,
        "metadata": meta,
        "items": items,
    }


def _delete(store: Store, route: ResourceRoute, request: Request, dry_run: bool) -> Reply:
    options = request.body if isinstance(request.body, dict) else {}
    propagation = request.query.get("propagationPolicy") or options.get("propagationPolicy")
    removed = store.delete(
        route.rtype,
        route.scope_namespace,
        _name(route),
        propagation=propagation or "Background",
        preconditions=options.get("preconditions"),
        dry_run=dry_run,
    )
    if route.rtype.kind == "Pod" and not route.rtype.group:
        return Reply(200, removed)  # pods answer with the deleted object upstream
    meta = removed["metadata"]
    return Reply(
        200, errors.success_status(route.rtype.plural, route.rtype.group, meta["name"], meta["uid"])
    )


# ---------------------------------------------------------------- scale


def scale_of(rtype: ResourceType, obj: Obj) -> Obj:
    """The ``autoscaling/v1 Scale`` view of a scalable object."""
    spec = _scale_spec(rtype)
    meta = obj["metadata"]
    selector_value: Any = _path(obj, spec.label_selector)
    selector = (
        selector_value if isinstance(selector_value, str) else selector_to_string(selector_value)
    )
    spec_replicas = _path(obj, spec.spec_replicas)
    status_replicas = _path(obj, spec.status_replicas)
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if key in meta
        },
        "spec": {"replicas": spec_replicas if isinstance(spec_replicas, int) else 0},
        "status": {
            "replicas": status_replicas if isinstance(status_replicas, int) else 0,
            "selector": selector,
        },
    }


def _path(obj: Mapping[str, Any], path: str) -> Any:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _set_path(obj: Obj, path: str, value: Any) -> None:
    parts = path.split(".")
    node = obj
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def _scale(store: Store, route: ResourceRoute, verb: str, request: Request, dry_run: bool) -> Reply:
    rtype, name = route.rtype, _name(route)
    spec_path = _scale_spec(rtype).spec_replicas
    if verb == "get":
        return Reply(200, scale_of(rtype, store.get(rtype, route.scope_namespace, name)))
    if verb not in ("update", "patch"):
        raise errors.ApiError(405, f"verb {verb} is not supported on {rtype.plural}/scale")
    media = require_patch_type(rtype, request.content_type) if verb == "patch" else ""

    def change(current: Obj) -> Obj:
        if verb == "update":
            wanted = request.body
            if not isinstance(wanted, dict) or wanted.get("kind") not in (None, "Scale"):
                raise errors.bad_request("the request body must be an autoscaling/v1 Scale")
        else:
            wanted = apply_patch(media, scale_of(rtype, current), request.body)
        replicas = _path(wanted, "spec.replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                name,
                [("spec.replicas", f"Invalid value: {replicas!r}: must be >= 0")],
            )
        _set_path(current, spec_path, replicas)
        wanted_rv = field_value(wanted, "metadata.resourceVersion")
        current["metadata"]["resourceVersion"] = wanted_rv or current["metadata"]["resourceVersion"]
        return current

    updated = store.mutate(
        rtype, route.scope_namespace, name, change, dry_run=dry_run, manager=request.field_manager
    )
    return Reply(200, scale_of(rtype, updated))
