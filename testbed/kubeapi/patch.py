"""Patch semantics: JSON merge patch (RFC 7386), the one patch type our clients send.

The controller writes merge patches only (adapters/kube/rest.py), and so do the
Python client's CustomObjectsApi and ``kubectl annotate``, ``label`` and ``scale``
(kubectl 1.32 with ``-v=8`` shows ``Content-Type: application/merge-patch+json``).
Strategic merge and JSON patch are not implemented: they get a 415 that names the
type to send.
"""

from __future__ import annotations

import copy
from typing import Any

from testbed.kubeapi.errors import ApiError

MERGE_PATCH = "application/merge-patch+json"


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


def require_merge_patch(content_type: str | None) -> None:
    """A PATCH of any other type is refused with 415 before the object is looked up."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != MERGE_PATCH:
        raise ApiError(
            415,
            f"the body of the request was in an unknown format - accepted media types "
            f"include: {MERGE_PATCH} (this fake API server implements no other patch type)",
        )
