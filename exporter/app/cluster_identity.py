"""The cluster UID the exporter exports (``guardian_exporter_cluster_info``), read from the
API server in a thread of its own: once when it answers, retried with a backoff until then
(the API down at start, or the RBAC not yet granting ``get`` on namespaces). Until it is
read the series is absent; the controller then cannot tell this node's cluster by UID."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


def _backoff(failures: int) -> float:
    return min(300.0, 5.0 * 2.0 ** min(failures - 1, 6))


class ClusterUid:
    """``value``: the UID once read, "" until then; safe to read from any thread."""

    def __init__(
        self, read: Callable[[], str], retry_delay: Callable[[int], float] = _backoff
    ) -> None:
        self._read = read
        self._retry_delay = retry_delay
        self.value = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.run, args=(self._stop,), name="guardian-exporter-cluster-uid", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def run(self, stop: threading.Event) -> None:
        """Read until it works or ``stop`` is set. Never raises."""
        failures = 0
        said = ""
        while not stop.is_set():
            try:
                self.value = self._read()
            except Exception as exc:  # any failure: the series stays absent, retried later
                failures += 1
                if str(exc) != said:  # once per distinct failure, not every retry
                    logger.warning(
                        "cannot read the cluster UID (Namespace kube-system; needs get on "
                        "namespaces): %s; guardian_exporter_cluster_info is absent until it is",
                        exc,
                    )
                    said = str(exc)
                stop.wait(self._retry_delay(failures))
                continue
            logger.info("cluster UID (Namespace kube-system): %s", self.value)
            return
