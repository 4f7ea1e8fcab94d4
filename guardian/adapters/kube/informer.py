"""A list + watch cache of one resource, through the `kubernetes` client, in a thread.

The same loop as the exporter's pod watcher (guardian_common.kube_watch): list, then
watch from the list's version; re-list when the watch expires (410 Gone) or fails, with
a capped backoff. Every call carries a timeout. Readers take :meth:`Informer.snapshot`
from any thread: the objects by (namespace, name), whether the first list has
succeeded, and the last error.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from guardian_common.kube_watch import apply_events, list_then_watch, list_version, watch_arguments

logger = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]


@dataclass(frozen=True)
class Cache:
    objects: Mapping[Key, Obj] = field(default_factory=dict)
    synced: bool = False  # the first list succeeded
    error: str = ""  # the last failure, "" while healthy
    changes: int = 0  # bumped by every list and event


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Informer:
    """``lister`` is a list function of the client (``list_pod_for_all_namespaces``,
    ``CustomObjectsApi(...).list_cluster_custom_object`` with ``partial``); ``kwargs``
    go to every list and watch call (selectors)."""

    def __init__(
        self,
        name: str,
        lister: Callable[..., Any],
        *,
        request_timeout: float = 10.0,
        watch_timeout_seconds: int = 300,
        retry_delay: Callable[[int], float] = lambda n: min(60.0, 2.0 ** min(n, 6)),
        **kwargs: Any,
    ) -> None:
        self.name = name
        self._lister = lister
        self._kwargs = kwargs
        self._request_timeout = request_timeout
        self._watch_timeout = watch_timeout_seconds
        self._retry_delay = retry_delay
        self._objects: dict[Key, Obj] = {}
        self._cache = Cache()
        self._lock = threading.Lock()
        self._watch: watch.Watch | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def snapshot(self) -> Cache:
        return self._cache

    def _publish(self, *, synced: bool = True, error: str = "") -> None:
        with self._lock:
            self._cache = Cache(dict(self._objects), synced, error, self._cache.changes + 1)

    def relist(self) -> str:
        response = self._lister(
            **self._kwargs, _request_timeout=self._request_timeout, _preload_content=False
        )
        body = json.loads(response.data)
        self._objects = {_key(item): item for item in body.get("items") or []}
        self._publish()
        return list_version(body)

    def watch_once(self, version: str) -> str:
        """Apply events until the server ends the stream; returns the last version.
        Raises ``client.ApiException`` (410) when ``version`` has expired."""
        self._watch = watch.Watch()
        stream = self._watch.stream(
            self._lister,
            **self._kwargs,
            **watch_arguments(
                version, request_timeout=self._request_timeout, watch_timeout=self._watch_timeout
            ),
        )
        return apply_events(stream, version, self._apply)

    def _apply(self, kind: str, obj: Obj) -> None:
        if kind == "DELETED":
            self._objects.pop(_key(obj), None)
        else:
            self._objects[_key(obj)] = obj
        self._publish()

    def run(self) -> None:
        """List, then watch, until :meth:`stop`. Never raises."""
        list_then_watch(self._stop, self.relist, self.watch_once, self._failed, self._retry_delay)

    def _failed(self, exc: Exception, failures: int) -> None:
        if isinstance(exc, client.ApiException):
            why = f"HTTP {exc.status} {exc.reason}"
        else:
            why = f"{type(exc).__name__}: {exc}"
        # Once per streak of failures (a kind the cluster does not serve fails forever).
        log = logger.warning if failures == 1 else logger.debug
        log("%s: list/watch failed (%s); retrying", self.name, why)
        self._publish(synced=self._cache.synced, error=why)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=5)
