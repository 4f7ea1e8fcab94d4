"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's timings.

The client's own ``leaderelection`` runs the leader's work in a thread it never stops;
this small lock keeps control here: the remediation loop asks ``is_leader()`` before
every cycle, every write to the cluster or to Slack asks ``check()`` (the fence:
adapters/kube/fence.py), and when renewal fails for ``renew_deadline`` the elector calls
``on_stopped`` (the runner stops and the process exits, as controller-runtime does).
Expiry is judged by the local monotonic clock from when we last saw the record change
(or last renewed it), never by comparing another host's timestamps with ours.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from guardian.adapters.kube.fence import NotLeader
from guardian.adapters.kube.rest import Conflict, KubeRest, NotFound, object_path
from guardian_common.errors import GuardianError

logger = logging.getLogger(__name__)


def _micro_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaseTiming:
    """client-go's leader-election durations, in seconds."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True)
class Clocks:
    """The wall clock (written into the Lease) and the monotonic one (deadlines)."""

    wall: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic


class LeaseElector:
    def __init__(
        self,
        rest: KubeRest,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming = LeaseTiming(),
        clocks: Clocks = Clocks(),
    ) -> None:
        self.rest = rest
        self.path = object_path("coordination.k8s.io/v1", "leases", namespace, name)
        self.collection = object_path("coordination.k8s.io/v1", "leases", namespace)
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = timing.lease_duration
        self.renew_deadline = timing.renew_deadline
        self.retry_period = timing.retry_period
        self.clock = clocks.wall
        self.monotonic = clocks.monotonic
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._leader = threading.Event()
        self._last_renew = 0.0

    def is_leader(self) -> bool:
        """We hold the Lease, and renewed it less than ``renew_deadline`` ago."""
        return self._leader.is_set() and self.monotonic() - self._last_renew < self.renew_deadline

    def check(self) -> None:
        """The fence, asked right before each write: raises NotLeader unless we lead."""
        if not self._leader.is_set():
            raise NotLeader(f"{self.identity} does not hold lease {self.namespace}/{self.name}")
        age = self.monotonic() - self._last_renew
        if age >= self.renew_deadline:
            raise NotLeader(
                f"{self.identity} last renewed lease {self.namespace}/{self.name} {age:.1f}s ago "
                f"(renew deadline {self.renew_deadline:g}s): not writing"
            )

    def _spec(self, acquire: str | None, transitions: int) -> dict[str, object]:
        now = _micro_time(self.clock())
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": round(self.lease_duration),
            "acquireTime": acquire or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt. True when we hold the lease afterwards."""
        try:
            lease = self.rest.get(self.path)
        except NotFound:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(None, 0),
            }
            try:
                self.rest.create(self.collection, body)
            except Conflict:
                return False
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        now = self.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False  # held by someone else and not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        acquire = spec.get("acquireTime") if holder == self.identity else None
        if holder != self.identity:
            transitions += 1
        body = {**lease, "spec": {**spec, **self._spec(acquire, transitions)}}
        try:
            self.rest.replace(self.path, body)  # carries the resourceVersion we read
        except Conflict:
            return False
        return True

    def run(
        self, on_started: Callable[[], None], on_stopped: Callable[[], None], stop: threading.Event
    ) -> None:
        """Block until leading, then renew until ``stop`` is set or renewal fails."""
        while not stop.is_set():
            if self._attempt():
                break
            stop.wait(self.retry_period)
        else:
            return
        logger.info(
            "leader election: %s now leads lease %s/%s", self.identity, self.namespace, self.name
        )
        self._last_renew = self.monotonic()
        self._leader.set()
        on_started()
        while not stop.wait(self.retry_period):
            if self._attempt():
                self._last_renew = self.monotonic()
            elif self.monotonic() - self._last_renew > self.renew_deadline:
                self._leader.clear()
                logger.error(
                    "leader election: lost lease %s/%s; stopping", self.namespace, self.name
                )
                on_stopped()
                return
        self.release()

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except GuardianError as exc:
            logger.warning("leader election: %s", exc)
            return False

    def release(self) -> None:
        """Give the lease up on a clean shutdown so a standby takes over at once."""
        if not self._leader.is_set():
            return
        self._leader.clear()
        try:
            lease = self.rest.get(self.path)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") == self.identity:
                spec = {**spec, "holderIdentity": "", "leaseDurationSeconds": 1}
                self.rest.replace(self.path, {**lease, "spec": spec})
        except GuardianError as exc:
            logger.warning("leader election: could not release the lease: %s", exc)
