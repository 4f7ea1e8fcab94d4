"""Raw pod objects, as the API sends them, into PodInfo."""

from __future__ import annotations

from exporter.adapters.kube_pods import pod_from_object

MAIN = "9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"
INIT = "1f2e3d4c5b6a79880a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f"
DEBUG = "2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a"


def test_container_ids_of_every_kind_of_container_map_to_their_names() -> None:
    pod = pod_from_object(
        {
            "metadata": {
                "uid": "3F6E1A2B-7C8D-4E9F-A0B1-C2D3E4F5A6B7",
                "name": "p",
                "namespace": "ml",
            },
            "spec": {"containers": [{"name": "main"}]},
            "status": {
                "phase": "Running",
                "initContainerStatuses": [{"name": "fetch", "containerID": f"cri-o://{INIT}"}],
                "containerStatuses": [
                    {"name": "main", "containerID": f"containerd://{MAIN.upper()}"},
                    # Waiting: no container yet, so nothing to map.
                    {"name": "sidecar", "state": {"waiting": {"reason": "ContainerCreating"}}},
                    {"name": "broken", "containerID": "no-scheme"},
                ],
                "ephemeralContainerStatuses": [
                    {"name": "debugger", "containerID": f"docker://{DEBUG}"}
                ],
            },
        }
    )

    assert pod.uid == "3f6e1a2b-7c8d-4e9f-a0b1-c2d3e4f5a6b7"
    assert pod.container_names == {MAIN: "main", INIT: "fetch", DEBUG: "debugger"}


def test_a_pod_without_statuses_names_no_container() -> None:
    pod = pod_from_object({"metadata": {"uid": "u", "name": "p", "namespace": "ml"}})

    assert pod.container_names == {}
