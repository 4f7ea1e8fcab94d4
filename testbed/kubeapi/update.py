"""How the server turns a create or an update request into the object it stores.

It owns uid, creationTimestamp, generation and resourceVersion; it keeps
status out of writes to the main resource of kinds with a status
subresource; it bumps the generation when anything but metadata and status
changes; and an update carrying a stale resourceVersion is a 409 Conflict.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from testbed.kubeapi import errors
from testbed.kubeapi.resources import ResourceType
from testbed.kubeapi.validation import apply_defaults, validate, validate_update

Obj = dict[str, Any]

# Metadata the server owns: callers cannot change it through an update or patch.
SERVER_OWNED = ("uid", "creationTimestamp", "generation", "deletionTimestamp")


def format_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def spec_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def prepare_create(
    rtype: ResourceType, namespace: str, obj: Mapping[str, Any], *, seed: bool, now: str
) -> Obj:
    """The object to store for a create. ``seed`` keeps caller-given uid, timestamps, status."""
    new: Obj = copy.deepcopy(dict(obj))
    new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
    meta = new.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = f"{meta['generateName']}{uuid.uuid4().hex[:5]}"
    if rtype.namespaced:
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if not seed:
        for owned in (*SERVER_OWNED, "resourceVersion", "managedFields"):
            meta.pop(owned, None)
        if rtype.has_status and rtype.kind != "Namespace":
            new.pop("status", None)
    meta.pop("resourceVersion", None)
    meta.setdefault("uid", str(uuid.uuid4()))
    meta.setdefault("creationTimestamp", now)
    meta.setdefault("generation", 1)
    apply_defaults(rtype, new)
    validate(rtype, new)
    return new


def prepare_update(
    rtype: ResourceType,
    current: Obj,
    desired: Obj,
    subresource: str,
    name: str,
    *,
    seed: bool,
) -> Obj:
    old_meta = current["metadata"]
    meta = desired.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise errors.bad_request("metadata must be an object")
    wanted_rv = meta.get("resourceVersion")
    if wanted_rv not in (None, "") and str(wanted_rv) != old_meta["resourceVersion"]:
        raise errors.conflict(rtype.plural, rtype.group, name)
    if meta.get("name", name) != name:
        raise errors.bad_request(
            f"the name of the object ({meta.get('name')}) does not match the name on "
            f"the URL ({name})"
        )
    if meta.get("uid") not in (None, "", old_meta["uid"]):
        raise errors.ApiError(
            409,
            f"Precondition failed: UID in precondition: {meta.get('uid')}, "
            f"UID in object meta: {old_meta['uid']}",
        )
    if rtype.namespaced and meta.get("namespace") not in (None, "", old_meta["namespace"]):
        raise errors.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if subresource == "status":
        # Only status changes through /status.
        new = copy.deepcopy(current)
        new["status"] = copy.deepcopy(desired.get("status"))
        if new["status"] is None:
            new.pop("status")
    else:
        new = copy.deepcopy(desired)
        new["apiVersion"], new["kind"] = rtype.api_version, rtype.kind
        for key in ("name", "namespace", "resourceVersion", "managedFields", *SERVER_OWNED):
            if key in old_meta:
                new["metadata"][key] = old_meta[key]
            else:
                new["metadata"].pop(key, None)
        if rtype.has_status and not seed:
            if "status" in current:
                new["status"] = copy.deepcopy(current["status"])
            else:
                new.pop("status", None)
        apply_defaults(rtype, new)
        if spec_of(new) != spec_of(current):
            new["metadata"]["generation"] = int(old_meta.get("generation", 1)) + 1
    validate_update(rtype, current, new)
    validate(rtype, new)
    return new


def record_manager(obj: Obj, manager: str | None, operation: str, when: str) -> None:
    if not manager:
        return
    entries = obj["metadata"].setdefault("managedFields", [])
    entry = {
        "manager": manager,
        "operation": operation,
        "apiVersion": obj["apiVersion"],
        "time": when,
        "fieldsType": "FieldsV1",
    }
    entries[:] = [
        e for e in entries if (e.get("manager"), e.get("operation")) != (manager, operation)
    ]
    entries.append(entry)
