"""Strategic merge patch for the built-in kinds, as ``kubectl apply`` sends it.

The semantics of k8s.io/apimachinery/pkg/util/strategicpatch (applying a patch, the
server's half), for JSON-shaped objects and a table of merge keys instead of Go types:

* maps merge recursively, ``null`` deletes a key; a value of another type replaces;
* a list whose field path is in :data:`MERGE_KEYS` merges: items that are objects by
  that key (an item the original lacks is appended), primitives as a set union; every
  other list (``tolerations``, ``args``, ``command``, ``rules``, ...) is replaced;
* ``$patch: replace`` in a map replaces the map; in a list of objects it makes the
  list the patch's other items. ``$patch: delete`` in a map empties it; in a list of
  objects it deletes the original item with that merge key. ``$patch: merge`` is the
  default strategy; written out it is refused, as upstream does (in a list: "merging
  lists cannot yet be specified in the patch"; in a map: an unknown patch type);
* ``$setElementOrder/<list>``: the order of the merged list: the items it names in its
  order, interleaved with the items only the server had, by their original positions;
* ``$retainKeys: [...]``: the original map's keys missing from the list are cleared;
* ``$deleteFromPrimitiveList/<list>``: values removed from a list of primitives.

A malformed patch is a 400, as upstream's ``interpretStrategicMergePatchError`` says.
"""

from __future__ import annotations

import copy
from typing import Any

from testbed.kubeapi.errors import ApiError, bad_request

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"

# The patchMergeKey of each merged list field of a pod spec, relative to the pod spec
# (k8s.io/api/core/v1 types.go: the fields tagged ``patchStrategy:"merge"``).
_POD_SPEC: dict[str, str] = {
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
for _containers in ("containers", "initContainers", "ephemeralContainers"):
    _POD_SPEC[_containers] = "name"
    _POD_SPEC[f"{_containers}.env"] = "name"
    _POD_SPEC[f"{_containers}.ports"] = "containerPort"
    _POD_SPEC[f"{_containers}.volumeMounts"] = "mountPath"
    _POD_SPEC[f"{_containers}.volumeDevices"] = "devicePath"

# Where kinds keep a pod spec: Pod; Deployment, DaemonSet, StatefulSet, ReplicaSet and
# Job; PodTemplate; CronJob.
_POD_SPECS = ("spec", "spec.template.spec", "template.spec", "spec.jobTemplate.spec.template.spec")

# The one table: field path (list indices left out) -> patch merge key, where "" merges
# a list of primitives as a set. A list field not named here is replaced by the patch.
MERGE_KEYS: dict[str, str] = {
    "metadata.finalizers": "",
    "metadata.ownerReferences": "uid",
    "status.conditions": "type",
    "spec.ports": "port",  # a Service's
    **{f"{spec}.{name}": key for spec in _POD_SPECS for name, key in _POD_SPEC.items()},
}


def strategic_merge_patch(target: Any, patch: Any) -> dict[str, Any]:
    """The object ``patch`` makes of ``target`` (neither is modified)."""
    if not isinstance(patch, dict):
        raise bad_request("the strategic merge patch must be a JSON object")
    original = copy.deepcopy(target) if isinstance(target, dict) else {}
    return _merge_map(original, patch, "")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _merge_map(original: dict[str, Any], patch: dict[str, Any], path: str) -> dict[str, Any]:
    """Merges ``patch`` into ``original``, which the caller owns (changed in place)."""
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            return _merge_map({}, {k: v for k, v in patch.items() if k != _DIRECTIVE}, path)
        if directive == "delete":
            return {}
        raise bad_request(f"unknown patch type: {directive} in map: {patch}")
    patch = dict(patch)
    retain = patch.pop(_RETAIN_KEYS, None)
    if retain is not None:
        if not isinstance(retain, list):
            raise bad_request("invalid patch format: the value of $retainKeys must be a list")
        for key in [key for key in original if key not in retain]:
            del original[key]
    orders = {key[len(_SET_ORDER) :]: patch.pop(key) for key in _prefixed(patch, _SET_ORDER)}
    before: dict[str, Any] = {name: copy.deepcopy(original.get(name)) for name in orders}
    for key in _prefixed(patch, _DELETE_PRIMITIVE):
        name, values = key[len(_DELETE_PRIMITIVE) :], patch.pop(key)
        if not isinstance(values, list):
            raise bad_request(f"invalid patch format: the value of {key} must be a list")
        if isinstance(original.get(name), list):
            original[name] = [value for value in original[name] if value not in values]
    for key, value in patch.items():
        if value is None:
            original.pop(key, None)
        else:
            original[key] = _merge_value(original.get(key), value, _join(path, key))
    for name, order in orders.items():
        if not isinstance(order, list):
            raise bad_request(f"invalid patch format: the value of {_SET_ORDER}{name} is no list")
        server = before[name] if isinstance(before[name], list) else []
        if isinstance(original.get(name), list):
            key = MERGE_KEYS.get(_join(path, name), "")
            original[name] = _ordered(original[name], order, server, key)
    return original


def _prefixed(patch: dict[str, Any], prefix: str) -> list[str]:
    return [key for key in patch if key.startswith(prefix)]


def _merge_value(original: Any, patch: Any, path: str) -> Any:
    if isinstance(patch, dict):
        return _merge_map(original if isinstance(original, dict) else {}, patch, path)
    if isinstance(patch, list):
        if path in MERGE_KEYS:
            return _merge_list(original if isinstance(original, list) else [], patch, path)
        return [_merge_value(None, item, path) for item in patch]
    return copy.deepcopy(patch)


def _merge_list(original: list[Any], patch: list[Any], path: str) -> list[Any]:
    key = MERGE_KEYS[path]
    if not key:  # primitives: a set union, in order
        merged: list[Any] = []
        for value in [*original, *patch]:
            if value not in merged:
                merged.append(value)
        return merged
    items: list[dict[str, Any]] = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise bad_request(f"invalid patch: {path}: expected a map, got {item!r}")
        directive = item.get(_DIRECTIVE)
        if directive is None:
            items.append(item)
        elif directive == "delete":
            if key not in item:
                raise _no_merge_key(item, key)
            original = [old for old in original if _key_of(old, key) != item[key]]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise bad_request("merging lists cannot yet be specified in the patch")
        else:
            raise bad_request(f"unknown patch type: {directive} in map: {item}")
    result = [] if replace else original
    for item in items:
        if key not in item:
            raise _no_merge_key(item, key)
        found = next((i for i, old in enumerate(result) if _key_of(old, key) == item[key]), None)
        if found is None:
            result.append(_merge_map({}, item, path))
        else:
            result[found] = _merge_map(result[found], item, path)
    return result


def _key_of(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else item


def _no_merge_key(item: dict[str, Any], key: str) -> ApiError:
    return bad_request(f"map: {item} does not contain declared merge key: {key}")


def _ordered(merged: list[Any], order: list[Any], server: list[Any], key: str) -> list[Any]:
    """``$setElementOrder``: the named items in its order, merged with the server-only
    items kept in their original order (upstream's normalizeElementOrder)."""
    wanted = [_key_of(item, key) if key else item for item in order]
    server_ids = [_key_of(item, key) if key else item for item in server]

    def ident(item: Any) -> Any:
        return _key_of(item, key) if key else item

    def server_index(item: Any) -> int:
        return server_ids.index(ident(item)) if ident(item) in server_ids else -1

    named = sorted((i for i in merged if ident(i) in wanted), key=lambda i: wanted.index(ident(i)))
    others = sorted((i for i in merged if ident(i) not in wanted), key=server_index)
    result: list[Any] = []
    while named and others:
        left, right = server_index(named[0]), server_index(others[0])
        result.append(named.pop(0) if 0 <= left < right else others.pop(0))
    return [*result, *named, *others]
