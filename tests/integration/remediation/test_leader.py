"""Leader election on a coordination.k8s.io/v1 Lease in the fake API server."""

from __future__ import annotations

import threading
from typing import Any

from guardian.adapters.kube.rest import KubeRest
from guardian.app.remediation.leader import Clocks, LeaseElector, LeaseTiming
from testbed.kubeapi import FakeKubeAPI


class Tick:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(rest: KubeRest, identity: str, tick: Tick, **timing: Any) -> LeaseElector:
    return LeaseElector(
        rest,
        "gpu-guardian",
        "gpu-guardian",
        identity,
        LeaseTiming(**timing),
        Clocks(monotonic=tick),
    )


def test_one_leader_and_takeover_after_expiry(kube: FakeKubeAPI, rest: KubeRest) -> None:
    tick = Tick()
    a, b = elector(rest, "a", tick), elector(rest, "b", tick)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()
    lease = kube.get("Lease", "gpu-guardian", "gpu-guardian")
    assert lease["spec"]["holderIdentity"] == "a"
    assert a.try_acquire_or_renew()  # renew
    tick.now += 10
    assert not b.try_acquire_or_renew()  # b saw a renewal 10 s ago: not expired
    tick.now += 16  # a stopped renewing; b's observation is older than the lease
    assert b.try_acquire_or_renew()
    lease = kube.get("Lease", "gpu-guardian", "gpu-guardian")
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]) == ("b", 1)
    assert not a.try_acquire_or_renew()
    writes = kube.requests(verb="update", path="leases/gpu-guardian$")
    assert all(r.query.get("fieldManager") == "gpu-guardian" for r in writes)


def test_losing_the_lease_stops_acting(kube: FakeKubeAPI, rest: KubeRest) -> None:
    a = LeaseElector(
        rest,
        "gpu-guardian",
        "gpu-guardian",
        "a",
        LeaseTiming(lease_duration=1.0, renew_deadline=0.5, retry_period=0.05),
    )
    started, stopped, stop = threading.Event(), threading.Event(), threading.Event()
    thread = threading.Thread(target=a.run, args=(started.set, stopped.set, stop))
    thread.start()
    try:
        assert started.wait(5)
        assert a.is_leader()
        # Another replica takes the lease over (e.g. after a network partition).
        kube.patch("Lease", "gpu-guardian", {"spec": {"holderIdentity": "b"}}, "gpu-guardian")
        assert stopped.wait(5)
        assert not a.is_leader()
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_clean_shutdown_releases_the_lease(kube: FakeKubeAPI, rest: KubeRest) -> None:
    a = LeaseElector(rest, "gpu-guardian", "gpu-guardian", "a", LeaseTiming(retry_period=0.05))
    started, stop = threading.Event(), threading.Event()
    thread = threading.Thread(target=a.run, args=(started.set, lambda: None, stop))
    thread.start()
    assert started.wait(5)
    stop.set()
    thread.join(5)
    assert kube.get("Lease", "gpu-guardian", "gpu-guardian")["spec"]["holderIdentity"] == ""
    b = LeaseElector(rest, "gpu-guardian", "gpu-guardian", "b")  # takes it over at once
    assert b.try_acquire_or_renew()
