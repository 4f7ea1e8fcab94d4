"""Fencing: a replica writes to the cluster only while it holds the leader Lease.

``FencedRest`` asks its fence before every request that is not a read, not once per
cycle: a leader paused (SIGSTOP, a long GC, a frozen VM) that wakes up after another
replica took the Lease over must write nothing. The fence is the elector's own check
(app/remediation/leader.py): the Lease held and its last renewal younger than the renew
deadline, by the local monotonic clock. Writes also carry resourceVersion
preconditions, so a write that slips between the check and the request still loses to
whatever the new leader wrote first.
"""

from __future__ import annotations

from collections.abc import Callable

from guardian.adapters.kube.rest import KubeRest
from guardian_common.errors import PermanentError

Fence = Callable[[], None]  # raises NotLeader


class NotLeader(PermanentError):
    """This replica does not hold the Lease (or its hold is too old to trust): retrying
    cannot help; it must stop writing."""


class FencedRest(KubeRest):
    """A KubeRest whose writes (create, update, patch, delete) pass ``fence`` first."""

    def __init__(self, rest: KubeRest, fence: Fence) -> None:
        super().__init__(rest.api_client, timeout=rest.timeout)
        self.fence = fence

    def before_request(self, method: str) -> None:
        if method.upper() != "GET":
            self.fence()
