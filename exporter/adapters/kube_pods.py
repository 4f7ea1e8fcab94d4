"""Keep a local cache of this node's pods with list + watch through the `kubernetes` client.

Only pods on this node are fetched (``spec.nodeName`` field selector). The
cache re-lists when the watch expires (410 Gone), times out or fails, and
every call carries a timeout. Terminal pods are dropped. While the API cannot
be reached the last directory is kept, marked ``up=False``, so the exporter
goes on serving pod-UID series and reports ``guardian_exporter_kube_up 0``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client, watch

from exporter.model.pods import PodDirectory, PodInfo
from guardian_common.kube_watch import apply_events, list_then_watch, list_version, watch_arguments

logger = logging.getLogger(__name__)

# Init containers, app containers and ephemeral (debug) containers can all run on a GPU.
_STATUS_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")


def container_names(status: Mapping[str, Any]) -> dict[str, str]:
    """Container ID -> name, from the statuses' ``containerID`` (``<runtime>://<id>``)."""
    names: dict[str, str] = {}
    for key in _STATUS_LISTS:
        for entry in status.get(key) or []:
            _, sep, container_id = str(entry.get("containerID") or "").partition("://")
            name = str(entry.get("name") or "")
            if sep and container_id and name:
                names[container_id.lower()] = name
    return names


def pod_from_object(obj: Mapping[str, Any]) -> PodInfo:
    """Build a :class:`PodInfo` from a raw pod object (JSON as the API sends it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    limits = {
        str(c.get("name", "")): {
            str(k): str(v) for k, v in ((c.get("resources") or {}).get("limits") or {}).items()
        }
        for c in spec.get("containers") or []
    }
    return PodInfo(
        uid=str(meta.get("uid", "")).lower(),
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        phase=str(status.get("phase", "")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        container_limits=limits,
        container_names=container_names(status),
    )


class PodWatcher:
    """Runs list + watch in a thread; :meth:`directory` is safe to call from any thread."""

    def __init__(
        self,
        core_api: client.CoreV1Api,
        node_name: str,
        *,
        request_timeout: float = 10.0,
        watch_timeout_seconds: int = 300,
        retry_delay: Callable[[int], float] = lambda failures: min(60.0, 2.0 ** min(failures, 6)),
    ) -> None:
        self._api = core_api
        self._selector = f"spec.nodeName={node_name}"
        self._request_timeout = request_timeout
        self._watch_timeout = watch_timeout_seconds
        self._retry_delay = retry_delay
        self._directory = PodDirectory()
        self._pods: dict[str, PodInfo] = {}
        self._watch: watch.Watch | None = None
        self.relists = 0

    def directory(self) -> PodDirectory:
        return self._directory

    def _publish(self, *, up: bool) -> None:
        live = {uid: pod for uid, pod in self._pods.items() if not pod.terminal}
        finished = frozenset((p.namespace, p.name) for p in self._pods.values() if p.terminal)
        self._directory = PodDirectory(by_uid=live, finished=finished, up=up, synced=True)

    def relist(self) -> str:
        """One full list; returns the resourceVersion to watch from."""
        response = self._api.list_pod_for_all_namespaces(
            field_selector=self._selector,
            _request_timeout=self._request_timeout,
            _preload_content=False,
        )
        body = json.loads(response.data)
        self._pods = {}
        for item in body.get("items") or []:
            pod = pod_from_object(item)
            self._pods[pod.uid] = pod
        self.relists += 1
        self._publish(up=True)
        return list_version(body)

    def watch_once(self, resource_version: str) -> str:
        """Apply watch events until the server closes the stream; returns the last version.

        Raises ``client.ApiException`` with status 410 when the version has expired.
        """
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self._api.list_pod_for_all_namespaces,
            field_selector=self._selector,
            **watch_arguments(
                resource_version,
                request_timeout=self._request_timeout,
                watch_timeout=self._watch_timeout,
            ),
            # deserialize=False would be cheaper, but the client then fails on
            # ERROR events (410 Gone) with a KeyError instead of an ApiException.
        )
        return apply_events(stream, resource_version, self._apply)

    def _apply(self, kind: str, obj: Mapping[str, Any]) -> None:
        pod = pod_from_object(obj)
        if kind == "DELETED":
            self._pods.pop(pod.uid, None)
        else:
            self._pods[pod.uid] = pod
        self._publish(up=True)

    def run(self, stop: threading.Event) -> None:
        """List, then watch, until ``stop`` is set. Never raises."""
        list_then_watch(
            stop,
            self.relist,
            self.watch_once,
            self._failed,
            self._retry_delay,
            gone=lambda: logger.info("pod watch expired (410 Gone); listing again"),
        )

    def _failed(self, exc: Exception, _failures: int) -> None:
        if isinstance(exc, client.ApiException):
            self._mark_down("pod list/watch failed: HTTP %s %s", exc.status, exc.reason)
        else:
            self._mark_down("pod list/watch failed: %s", exc)

    def _mark_down(self, message: str, *args: object) -> None:
        logger.warning(message, *args)
        self._directory = dataclasses.replace(self._directory, up=False)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()
