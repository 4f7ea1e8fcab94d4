"""What a kubelet would do for the install test: run the controller's pod as the API holds
it (the Deployment's args and env, its ConfigMap and Secret volumes laid out as the kubelet
lays them out), as a process of the project's own venv.

The differences from a node, each one named: the mount paths are directories of the test
(the paths in the args, env and config are rewritten to them, as a mount namespace would
show them); the pod IP is loopback and the port a free one; the Service name of
Prometheus resolves to the test's Prometheus (cluster DNS), once checked to be the one
the install configured; the service account's credentials are a kubeconfig for the test
bed's API server; and the evaluation and cycle intervals are 5 s instead of 1 min, so that
the test waits seconds, not minutes.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from guardian.adapters.local_prometheus import free_loopback_port
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi.errors import ApiError
from tests.helpers import write_configmap_volume

NS = "gpu-guardian"
DEPLOYMENT = "gpu-guardian-controller"
FIELDS = {
    "status.podIP": "127.0.0.1",
    "spec.nodeName": "node-1",
    "metadata.name": "gpu-guardian-controller-6f7c9-abcde",
    "metadata.namespace": NS,
}
FAST = {"GUARDIAN_EVALUATION_INTERVAL": "5s", "GUARDIAN_REMEDIATION__CYCLE_INTERVAL": "5s"}

Obj = dict[str, Any]


def _volume(api: FakeKubeAPI, volume: Obj, host: Path) -> None:
    if "configMap" in volume:
        data = api.get("ConfigMap", volume["configMap"]["name"], NS).get("data") or {}
        write_configmap_volume(host, data)
    elif "secret" in volume:
        try:
            secret = api.get("Secret", volume["secret"]["secretName"], NS)
        except ApiError:
            assert volume["secret"].get("optional"), f"Secret of volume {volume['name']} missing"
            host.mkdir(parents=True)
            return
        data = secret.get("data") or {}
        write_configmap_volume(host, {k: base64.b64decode(v).decode() for k, v in data.items()})
    else:
        assert "emptyDir" in volume, f"volume {volume['name']}: a kind this test does not lay out"
        host.mkdir(parents=True)


def _env(container: Obj) -> dict[str, str]:
    """The container's environment as the kubelet builds it ($(VAR) expanded)."""
    env: dict[str, str] = {}
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = re.sub(
                r"\$\(([A-Za-z_]\w*)\)", lambda m: env.get(m[1], m[0]), item["value"]
            )
        else:
            env[item["name"]] = FIELDS[item["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


class ControllerPod:
    """One replica of the controller, started from what the API server holds."""

    def __init__(
        self, api: FakeKubeAPI, root: Path, kubeconfig: Path, prometheus: tuple[str, str]
    ) -> None:
        self.api = api
        self.root = root
        self.kubeconfig = kubeconfig
        self.prometheus = prometheus  # (the URL the install configures, the test's)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "controller.log"
        self.address = ""
        self.stopped = False

    def start(self) -> None:
        spec = self.api.get("Deployment", DEPLOYMENT, NS)["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts: dict[str, str] = {}
        for mount in container["volumeMounts"]:
            host = self.root / "volumes" / mount["name"]
            _volume(self.api, volumes[mount["name"]], host)
            mounts[mount["mountPath"]] = str(host)

        # One pass, whole path components only: /tmp is also a prefix of the test's paths.
        pattern = re.compile(
            "|".join(re.escape(p) for p in sorted(mounts, key=len, reverse=True))
            + r"(?=/|$|[\s'\",\]])"
        )

        def local(text: str) -> str:
            return pattern.sub(lambda m: mounts[m.group(0)], text)

        for path in (self.root / "volumes").rglob("*.yaml"):  # the config names mount paths
            if path.is_file() and not path.is_symlink():
                path.write_text(local(path.read_text(encoding="utf-8")), encoding="utf-8")
        env = {k: local(v) for k, v in _env(container).items()}
        assert env["GUARDIAN_PROMETHEUS__URL"] == self.prometheus[0]
        assert env["GUARDIAN_LISTEN_ADDRESS"] == "127.0.0.1:9469"
        self.address = f"127.0.0.1:{free_loopback_port()}"
        env.update(
            GUARDIAN_PROMETHEUS__URL=self.prometheus[1],
            GUARDIAN_LISTEN_ADDRESS=self.address,
            KUBECONFIG=str(self.kubeconfig),
            PATH=os.environ.get("PATH", ""),
            HOME=str(self.root),
            **FAST,
        )
        argv = [sys.executable, "-m", "guardian", *(local(a) for a in container["args"])]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """SIGTERM, as the kubelet sends it; the controller releases its Lease."""
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def failed(self) -> str | None:
        """Why the pod is not running, if it started and exited."""
        if self.proc is not None and not self.stopped and self.proc.poll() is not None:
            return f"the controller exited with {self.proc.returncode}:\n{self.output()[-4000:]}"
        return None

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
