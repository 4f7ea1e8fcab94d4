"""Patch semantics: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch.

Strategic merge covers what controllers send on built-in kinds: maps merge
recursively with ``null`` deleting a key, lists of objects merge by their
upstream merge key (see ``MERGE_KEYS``), other lists are replaced, and the
``$patch: replace|delete``, ``$deleteFromPrimitiveList/<field>`` and
``$setElementOrder/<field>`` directives are honoured (the last only by being
dropped). ``$retainKeys`` is not supported and is rejected.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from guardian.sim.kubeapi.errors import ApiError

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Field name -> merge key, for lists that strategic merge merges by key upstream.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "conditions": "type",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
}
# Primitive lists that strategic merge unions instead of replacing.
MERGED_PRIMITIVE_LISTS = frozenset({"finalizers"})


def _invalid_patch(message: str) -> ApiError:
    return ApiError(422, message, reason="Invalid")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# ---------------------------------------------------------------- strategic merge


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    return _smp_map(target if isinstance(target, dict) else {}, patch)


def _smp_map(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    if directive is not None:
        raise _invalid_patch(f"unknown patch type: {directive!r} in map")
    if "$retainKeys" in patch:
        raise _invalid_patch("the $retainKeys directive is not supported by this server")
    result = dict(target)
    for key, value in patch.items():
        if key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            remove = value if isinstance(value, list) else []
            current = result.get(field)
            if isinstance(current, list):
                result[field] = [item for item in current if item not in remove]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            nested = (
                _smp_map(result.get(key) or {}, value)
                if isinstance(result.get(key), dict)
                else _smp_map({}, value)
            )
            result[key] = nested
        elif isinstance(value, list):
            result[key] = _smp_list(key, result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _smp_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current_list = current if isinstance(current, list) else []
    if field in MERGED_PRIMITIVE_LISTS:
        merged = list(current_list)
        merged.extend(item for item in patch if item not in merged)
        return merged
    merge_key = MERGE_KEYS.get(field)
    if merge_key is None or not all(isinstance(item, dict) for item in patch):
        if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
            return [copy.deepcopy(i) for i in patch if not _is_directive(i)]
        return copy.deepcopy(patch)
    if any(item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(item) for item in patch if not _is_directive(item)]
    merged = [copy.deepcopy(item) for item in current_list]
    for item in patch:
        if merge_key not in item:
            raise _invalid_patch(f"map: {item} does not contain declared merge key: {merge_key}")
        index = next(
            (
                i
                for i, old in enumerate(merged)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
        elif index is None:
            merged.append(_smp_map({}, item))
        else:
            merged[index] = _smp_map(merged[index], item)
    return merged


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and set(item) == {"$patch"}


# ---------------------------------------------------------------- JSON patch


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _invalid_patch(f"invalid JSON pointer {path!r}: must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        node = _child(node, part, path)
    return node


def _child(node: Any, part: str, path: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            raise _invalid_patch(f"jsonpatch: path {path!r} not found (missing {part!r})")
        return node[part]
    if isinstance(node, list):
        return node[_index(node, part, path, allow_end=False)]
    raise _invalid_patch(f"jsonpatch: path {path!r} traverses a non-container")


def _index(node: list[Any], part: str, path: str, *, allow_end: bool) -> int:
    if part == "-" and allow_end:
        return len(node)
    if not part.isdigit() or (len(part) > 1 and part.startswith("0")):
        raise _invalid_patch(f"jsonpatch: invalid array index {part!r} in {path!r}")
    index = int(part)
    limit = len(node) + (1 if allow_end else 0)
    if index >= limit:
        raise _invalid_patch(f"jsonpatch: index {index} out of range in {path!r}")
    return index


def _get(doc: Any, path: str) -> Any:
    node = doc
    for part in _pointer(path):
        node = _child(node, part, path)
    return node


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return copy.deepcopy(value)
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        parent[last] = copy.deepcopy(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, allow_end=True), copy.deepcopy(value))
    else:
        raise _invalid_patch(f"jsonpatch: cannot add at {path!r}")
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    parts = _pointer(path)
    if not parts:
        raise _invalid_patch("jsonpatch: cannot remove the whole document")
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise _invalid_patch(f"jsonpatch: remove of missing path {path!r}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, allow_end=False))
    raise _invalid_patch(f"jsonpatch: cannot remove at {path!r}")


def json_patch(target: Any, operations: Any) -> Any:
    """Apply RFC 6902 ``operations`` to a copy of ``target``; a failed ``test`` is a 422."""
    if not isinstance(operations, list):
        raise ApiError(400, "json patch body must be a list of operations")
    doc = copy.deepcopy(target)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise _invalid_patch(f"jsonpatch: operation {number} needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise _invalid_patch(f"jsonpatch: operation {number} ({kind}) needs 'value'")
        if kind == "add":
            doc = _add(doc, path, op["value"])
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # must exist
            doc, _ = _remove(doc, path) if _pointer(path) else (doc, None)
            doc = _add(doc, path, op["value"])
        elif kind in ("move", "copy"):
            source = op.get("from")
            if not isinstance(source, str):
                raise _invalid_patch(f"jsonpatch: operation {number} ({kind}) needs 'from'")
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                doc, value = _remove(doc, source)
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise _invalid_patch(
                    f"the server rejected our request due to an error in our request: "
                    f"testing value {json.dumps(op['value'])} at {path!r} failed"
                )
        else:
            raise _invalid_patch(f"jsonpatch: unknown operation {kind!r}")
    return doc


def apply_patch(content_type: str, target: dict[str, Any], body: Any, *, custom: bool) -> Any:
    """Apply a PATCH body of ``content_type`` to ``target``; returns the new object."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media == MERGE_PATCH:
        return merge_patch(target, body)
    if media == JSON_PATCH:
        return json_patch(target, body)
    if media == STRATEGIC_MERGE_PATCH:
        if custom:
            # The real server cannot strategic-merge custom resources (no schema for it).
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {JSON_PATCH}, {MERGE_PATCH}, {APPLY_PATCH}",
            )
        return strategic_merge_patch(target, body)
    raise ApiError(
        415,
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{JSON_PATCH}, {MERGE_PATCH}, {STRATEGIC_MERGE_PATCH}",
    )
