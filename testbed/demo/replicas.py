"""The controller's replicas: ``guardian run`` processes with leader election on one Lease.

As the shipped Deployment runs them: each with its own config, port and state directory
(its emptyDir), only the Lease holder acting. The demo (and the HA end-to-end test)
kills one with SIGKILL, stops or restarts one, wipes a state directory as a
rescheduled pod would lose it, and asks the fake API who holds the Lease.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardian.adapters.local_prometheus import free_loopback_port
from guardian_common.errors import GuardianError
from testbed.demo import config as cfg
from testbed.demo.cluster import CONTROLLER_NAMESPACE
from testbed.demo.processes import Child, ProcessGroup, wait_http_ok
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi.errors import ApiError

logger = logging.getLogger(__name__)

ConfigFor = Callable[[cfg.ReplicaSpec], Mapping[str, Any]]


class ReplicaStartError(GuardianError):
    """A replica did not start; the message shows its log."""


@dataclass
class Replicas:
    procs: ProcessGroup
    workdir: Path
    kube: FakeKubeAPI
    env: Mapping[str, str] = field(default_factory=dict)
    specs: dict[str, cfg.ReplicaSpec] = field(default_factory=dict)
    children: dict[str, Child] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        procs: ProcessGroup,
        workdir: Path,
        kube: FakeKubeAPI,
        config_for: ConfigFor,
        *,
        names: Sequence[str] = ("a", "b"),
        env: Mapping[str, str] | None = None,
    ) -> Replicas:
        """Write each replica's config (``config_for`` builds it from the replica's spec)."""
        replicas = cls(procs, workdir, kube, dict(env or {}))
        for name in names:
            spec = cfg.ReplicaSpec(name, free_loopback_port())
            replicas.specs[name] = spec
            cfg.write_yaml(workdir / spec.config_name, config_for(spec))
        return replicas

    def config(self, name: str) -> Path:
        return self.workdir / self.specs[name].config_name

    def state_dir(self, name: str) -> Path:
        return self.workdir / self.specs[name].state_dir

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.specs[name].listen_port}"

    def start(self, name: str, timeout: float = 30.0) -> Child:
        argv = ["guardian", "run", "--config", str(self.config(name))]
        child = self.procs.python(f"guardian-run-{name}", argv, env=self.env)
        self.children[name] = child
        if not wait_http_ok(f"{self.url(name)}/healthz", timeout, child):
            raise ReplicaStartError(f"guardian run ({name}) did not start:\n{child.log_tail()}")
        return child

    def kill(self, name: str) -> None:
        """SIGKILL, as a node failure or the OOM killer would."""
        self.procs.kill(self.children[name])

    def stop(self, name: str) -> None:
        """SIGTERM, as a rolling update does: the replica gives its Lease up."""
        self.procs.stop(self.children[name])

    def wipe(self, name: str) -> None:
        """Lose the replica's state directory, as a pod rescheduled elsewhere does."""
        shutil.rmtree(self.state_dir(name), ignore_errors=True)

    def running(self) -> list[str]:
        return [n for n, c in self.children.items() if c.running()]

    def leader(self) -> str | None:
        """The replica holding the Lease, by the Lease (None: nobody yet)."""
        try:
            lease = self.kube.get("Lease", cfg.LEASE_NAME, CONTROLLER_NAMESPACE)
        except ApiError:  # not created yet
            return None
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        return holder if holder in self.specs else None
