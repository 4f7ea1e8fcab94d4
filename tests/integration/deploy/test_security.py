"""The security context of every pod: read-only root filesystems, no capabilities, no
privilege escalation, host access only where the exporter needs it (docs/deploy.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from .conftest import KUSTOMIZATIONS, MANIFESTS, Build, Obj, kustomize_build

EXPORTER = "gpu-guardian-exporter"
# The only host paths mounted, all read-only: attribution and allocations.
HOST_PATHS = {"/proc", "/var/lib/kubelet/pod-resources"}


def _pod_spec(workload: Obj) -> Obj:
    spec: Obj = workload["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_every_container_is_locked_down(builds: dict[str, Build], name: str) -> None:
    seen = 0
    for workload, container in builds[name].containers():
        pod = _pod_spec(workload)
        where = f"{name}: {workload['metadata']['name']}/{container['name']}"
        sc = container["securityContext"]
        assert sc["readOnlyRootFilesystem"] is True, where
        assert sc["allowPrivilegeEscalation"] is False, where
        assert sc.get("privileged", False) is False, where
        assert sc["capabilities"] == {"drop": ["ALL"]}, f"{where}: adds capabilities"
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", where
        user = sc.get("runAsUser", pod["securityContext"].get("runAsUser"))
        non_root = sc.get("runAsNonRoot", pod["securityContext"].get("runAsNonRoot"))
        if workload["metadata"]["name"] == EXPORTER:
            # The one documented exception: root's UID, without any capability, only to
            # connect to the kubelet's root-owned pod-resources socket.
            assert (user, non_root) == (0, False), where
        else:
            assert non_root is True, where
            assert isinstance(user, int), where
            assert user > 0, where
        # /tmp is writable only as a small emptyDir.
        tmp = next(m for m in container["volumeMounts"] if m["mountPath"] == "/tmp")
        volume = next(v for v in pod["volumes"] if v["name"] == tmp["name"])
        assert "sizeLimit" in volume["emptyDir"], where
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["path"] in ("/healthz", "/readyz"), where
        resources = container["resources"]
        assert set(resources["requests"]) == {"cpu", "memory"}, where
        assert "memory" in resources["limits"], where
        seen += 1
    assert seen >= 1


@pytest.mark.parametrize("name", KUSTOMIZATIONS)
def test_host_access_only_for_the_exporter_and_read_only(
    builds: dict[str, Build], name: str
) -> None:
    for workload, container in builds[name].containers():
        pod = _pod_spec(workload)
        host_volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
        assert not pod.get("hostNetwork", False)
        assert not pod.get("hostIPC", False)
        if workload["metadata"]["name"] != EXPORTER:
            assert not host_volumes
            assert not pod.get("hostPID", False)
            continue
        assert pod["hostPID"] is True  # NVML's PIDs are the host's
        assert set(host_volumes.values()) == HOST_PATHS
        for mount in container["volumeMounts"]:
            if mount["name"] in host_volumes:
                assert mount.get("readOnly") is True, mount


def test_controller_is_highly_available_and_observe_only(builds: dict[str, Build]) -> None:
    deployment = builds["base"].one("Deployment", "gpu-guardian-controller")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pdb = builds["base"].one("PodDisruptionBudget", "gpu-guardian-controller")
    assert pdb["spec"]["minAvailable"] == 1
    container = _pod_spec(deployment)["containers"][0]
    assert not [e for e in container.get("env", []) if "TOKEN" in e["name"]], "secret in env"


def test_exporter_runs_on_gpu_nodes_through_their_taints(builds: dict[str, Build]) -> None:
    pod = _pod_spec(builds["base"].one("DaemonSet", EXPORTER))
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists"} in pod["tolerations"]
    assert "runtimeClassName" not in pod  # optional: manifests/components/nvidia-runtime


def test_nvidia_runtime_component_sets_the_runtime_class(kubectl: str, tmp_path: Path) -> None:
    relative = os.path.relpath(MANIFESTS, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [f"{relative}/base"],
                "components": [f"{relative}/components/nvidia-runtime"],
            }
        ),
        encoding="utf-8",
    )
    build = Build("with-runtime", kustomize_build(kubectl, tmp_path))
    assert _pod_spec(build.one("DaemonSet", EXPORTER))["runtimeClassName"] == "nvidia"
    controller = _pod_spec(build.one("Deployment", "gpu-guardian-controller"))
    assert "runtimeClassName" not in controller
