"""This cluster's identity: the UID of the ``kube-system`` Namespace, the convention
OpenTelemetry's ``k8s.cluster.uid`` follows. Names repeat across clusters and are copied
from one config to the next; this UID is the API server's, set once."""

from __future__ import annotations

import json

from kubernetes import client

UID_NAMESPACE = "kube-system"


class ClusterUidError(Exception):
    """The API server refused or failed the read; the message is one line."""


def read_cluster_uid(core_api: client.CoreV1Api, timeout: float) -> str:
    """The cluster's UID; raises when it cannot be read (ClusterUidError for an HTTP
    error, a transport error as the client raises it)."""
    try:
        response = core_api.read_namespace(
            UID_NAMESPACE, _request_timeout=timeout, _preload_content=False
        )
    except client.ApiException as exc:
        raise ClusterUidError(f"HTTP {exc.status} {exc.reason}") from exc
    body = json.loads(response.data)
    uid = str((body.get("metadata") or {}).get("uid") or "")
    if not uid:
        raise ClusterUidError(f"the {UID_NAMESPACE} Namespace has no metadata.uid")
    return uid
