"""Kubernetes enrichment for each snapshot: pod cache + kubelet allocations -> Enrichment,
and the cluster UID once it is read (cluster_identity.py).

Runs inside the collection cycle (never on the scrape path). The pod cache is kept
up to date by a list+watch thread; the kubelet's pod-resources List is called once
per cycle with a deadline. Without the kubelet socket, GPU counts come from the pods'
``nvidia.com/gpu`` limits, without device identity (``uuid=""``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from exporter.adapters.kube_pods import PodWatcher
from exporter.adapters.podresources import PodResourcesClient, PodResourcesError
from exporter.app.cluster_identity import ClusterUid
from exporter.engine.allocation_mapping import allocations_from_devices, allocations_from_limits
from exporter.engine.pod_join import EnrichmentInput, enrich
from exporter.model.allocation import Allocation
from exporter.model.enrichment import Enrichment
from exporter.model.pods import PodDirectory
from exporter.model.snapshot import Snapshot
from guardian_common.grouping import GroupingOptions

logger = logging.getLogger(__name__)


class KubeEnricher:
    def __init__(
        self,
        watcher: PodWatcher,
        kubelet: PodResourcesClient,
        grouping: GroupingOptions,
        extra_resources: frozenset[str] = frozenset(),
        on_close: Callable[[], None] = lambda: None,
        cluster_uid: ClusterUid | None = None,
    ) -> None:
        self._on_close = on_close
        self._cluster_uid = cluster_uid
        self._watcher = watcher
        self._kubelet = kubelet
        self._grouping = grouping
        self._extra = extra_resources
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reported: set[str] = set()
        self._kubelet_failing = False

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._watcher.run, args=(self._stop,), name="guardian-exporter-pods", daemon=True
        )
        self._thread.start()
        if self._cluster_uid is not None:
            self._cluster_uid.start()

    def stop(self) -> None:
        self._stop.set()
        if self._cluster_uid is not None:
            self._cluster_uid.stop()
        self._watcher.stop()
        if self._thread is not None:
            # A watch blocked in a read only notices at its next event or timeout; the
            # thread is a daemon, so shutdown does not wait for it beyond a moment.
            self._thread.join(timeout=1)
        self._kubelet.close()
        if self._thread is None or not self._thread.is_alive():
            self._on_close()  # closing the client under a live read can block

    def _allocations(self, pods: PodDirectory) -> tuple[list[Allocation], bool]:
        if self._kubelet.available():
            try:
                devices = self._kubelet.list()
            except PodResourcesError as exc:
                if not self._kubelet_failing:
                    logger.warning("%s; falling back to pod GPU limits", exc)
                self._kubelet_failing = True
            else:
                if self._kubelet_failing:
                    logger.info("pod-resources List works again")
                self._kubelet_failing = False
                return allocations_from_devices(devices, self._extra), True
        limits: list[Allocation] = []
        for pod in pods.by_uid.values():
            limits += allocations_from_limits(
                pod.namespace, pod.name, pod.container_limits, self._extra
            )
        return limits, False

    def __call__(self, snapshot: Snapshot) -> Enrichment:
        pods = self._watcher.directory()
        allocations, identified = self._allocations(pods)
        result = enrich(
            EnrichmentInput(
                pods=pods,
                allocations=allocations,
                identified=identified,
                gpu_index={g.uuid: g.index for g in snapshot.gpus},
                pod_series=snapshot.pods,
            ),
            self._grouping,
            kube_up=pods.up,
        )
        self._report(result)
        if self._cluster_uid is not None and self._cluster_uid.value:
            result = dataclasses.replace(result, cluster_uid=self._cluster_uid.value)
        return result

    def _report(self, result: Enrichment) -> None:
        # Collisions and reserved keys are found as pods appear; say so once each.
        for name, keys in result.collisions.items():
            if name not in self._reported:
                self._reported.add(name)
                logger.warning(
                    "pod label keys %s all map to the label %r; none of them is exported",
                    ", ".join(keys),
                    name,
                )
        for key in result.reserved:
            if key not in self._reported:
                self._reported.add(key)
                logger.warning("pod label %r would overwrite one of our labels; not exported", key)
