"""Patch semantics: JSON merge patch (RFC 7386), and strategic merge patch for built-ins.

The controller writes merge patches only (adapters/kube/rest.py), and so do the
Python client's CustomObjectsApi and ``kubectl annotate``, ``label`` and ``scale``
(kubectl 1.32 with ``-v=8`` shows ``Content-Type: application/merge-patch+json``).
A second ``kubectl apply`` of a built-in kind sends a strategic merge patch
(strategic_patch.py); of a custom resource, a merge patch. As the real API server,
this one refuses a strategic merge patch to a custom resource with a 415 (its text
is k8s.io/apiserver's ``NewUnsupportedMediaTypeError``, naming the types accepted).
JSON patch and server-side apply are not implemented: they get the same 415.
"""

from __future__ import annotations

import copy
from typing import Any

from testbed.kubeapi.errors import ApiError
from testbed.kubeapi.resources import ResourceType
from testbed.kubeapi.strategic_patch import STRATEGIC_MERGE_PATCH, strategic_merge_patch

MERGE_PATCH = "application/merge-patch+json"

# The API groups of Kubernetes' own kinds (a kind served from another group, such as
# kubeflow.org's Notebook, is a custom resource even where the fake builds it in).
BUILTIN_GROUPS = frozenset(
    {
        "",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apps",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "networking.k8s.io",
        "node.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "scheduling.k8s.io",
        "storage.k8s.io",
    }
)


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


def accepted_patch_types(rtype: ResourceType) -> tuple[str, ...]:
    """The patch types this server applies to ``rtype``: strategic merge only to the
    kinds Kubernetes itself serves (a custom resource has no Go type to merge by)."""
    if rtype.crd is None and rtype.group in BUILTIN_GROUPS:
        return (STRATEGIC_MERGE_PATCH, MERGE_PATCH)
    return (MERGE_PATCH,)


def require_patch_type(rtype: ResourceType, content_type: str | None) -> str:
    """The media type of a PATCH; one ``rtype`` does not take is refused with 415 before
    the object is looked up."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    accepted = accepted_patch_types(rtype)
    if media not in accepted:
        raise ApiError(
            415,
            "the body of the request was in an unknown format - accepted media types "
            f"include: {', '.join(accepted)}",
        )
    return media


def apply_patch(media: str, target: Any, patch: Any) -> dict[str, Any]:
    """``target`` patched by ``patch`` of type ``media`` (from :func:`require_patch_type`)."""
    if media == STRATEGIC_MERGE_PATCH:
        return strategic_merge_patch(target, patch)
    result = merge_patch(target, patch)
    return result if isinstance(result, dict) else {}
