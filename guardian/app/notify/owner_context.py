"""What Slack messages show about an alert's owner, read from the cluster.

The notifier asks for it when an alert fires or resolves: the workload at the root of
the pod's owner chain (so a message says "Deployment train", not "Pod train-7f9c-0")
and the workload's and namespace's annotations (for ``gpu-guardian.io/slack-mention``).
Answers are cached briefly, since one episode's transitions ask for the same pod.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from guardian.adapters.kube.reader import KubeReader
from guardian.model.labels import EMPTY_LABELS, LabelSet
from guardian.model.notifications import OwnerContext

logger = logging.getLogger(__name__)


class OwnerLookup:
    def __init__(
        self,
        reader: KubeReader,
        *,
        ttl: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reader = reader
        self._ttl = ttl
        self._monotonic = monotonic
        self._cache: dict[tuple[str, str], tuple[float, OwnerContext | None]] = {}

    def __call__(self, labels: LabelSet) -> OwnerContext | None:
        namespace, pod = labels.get("namespace", ""), labels.get("pod", "")
        if not namespace:
            return None
        key = (namespace, pod)
        now = self._monotonic()
        cached = self._cache.get(key)
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        try:
            context = self._read(namespace, pod)
        except Exception as exc:  # per item: a message without owner details beats none
            logger.warning("cannot read the owner of %s/%s for Slack: %s", namespace, pod, exc)
            context = None
        self._cache[key] = (now, context)
        return context

    def _read(self, namespace: str, pod: str) -> OwnerContext:
        ns = self._reader.namespace(namespace)
        ns_annotations = LabelSet(ns.annotations) if ns is not None else EMPTY_LABELS
        owner = self._reader.resolve_pod(namespace, pod) if pod else None
        if owner is None or owner.root is None:
            return OwnerContext(namespace_annotations=ns_annotations)
        meta = self._reader.get(owner.root).get("metadata") or {}
        return OwnerContext(
            workload=owner.root,
            workload_annotations=LabelSet(dict(meta.get("annotations") or {})),
            namespace_annotations=ns_annotations,
        )
