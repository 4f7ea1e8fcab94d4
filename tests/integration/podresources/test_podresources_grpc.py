"""The pod-resources client against a real gRPC server on a temporary unix socket."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from exporter.adapters.podresources import PodResourcesClient, PodResourcesError
from exporter.model.allocation import ContainerDevices
from testbed.node.kubelet import FakeKubelet

pytestmark = pytest.mark.e2e

DEVICES = [
    ContainerDevices("ml", "train-0", "main", "nvidia.com/gpu", ("GPU-a", "GPU-b")),
    ContainerDevices("ml", "train-0", "main", "cpu", ("3",)),
    ContainerDevices("ml", "train-0", "logger", "nvidia.com/mig-1g.10gb", ("MIG-c",)),
    ContainerDevices("team", "idle-0", "nb", "nvidia.com/gpu", ("GPU-d::2",)),
]


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # unix socket paths are limited to 108 bytes; pytest's tmp_path can be longer.
    with tempfile.TemporaryDirectory(prefix="kubelet") as path:
        yield Path(path)


@pytest.fixture
def kubelet(socket_dir: Path) -> Iterator[FakeKubelet]:
    with FakeKubelet(socket_dir / "kubelet.sock") as server:
        server.set_devices(DEVICES)
        yield server


@pytest.fixture
def client(kubelet: FakeKubelet) -> Iterator[PodResourcesClient]:
    client = PodResourcesClient(kubelet.socket_path, timeout=5)
    try:
        yield client
    finally:
        client.close()


def test_list_returns_every_container_device_entry(client: PodResourcesClient) -> None:
    assert client.available()
    assert sorted(client.list(), key=repr) == sorted(DEVICES, key=repr)


def test_one_channel_survives_failed_calls(
    client: PodResourcesClient, kubelet: FakeKubelet
) -> None:
    kubelet.fail_next([grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL])

    with pytest.raises(PodResourcesError, match="UNAVAILABLE") as first:
        client.list()
    with pytest.raises(PodResourcesError, match="INTERNAL"):
        client.list()
    channel = client._channel
    devices = client.list()

    assert first.value.code == "UNAVAILABLE"
    assert len(devices) == len(DEVICES)
    assert client._channel is channel
    assert kubelet.calls == 3


def test_changes_on_the_node_show_up_on_the_next_call(
    client: PodResourcesClient, kubelet: FakeKubelet
) -> None:
    assert len(client.list()) == 4
    kubelet.set_devices(DEVICES[:1])
    assert client.list() == DEVICES[:1]


def test_missing_socket_is_reported_not_raised_as_grpc(socket_dir: Path) -> None:
    client = PodResourcesClient(socket_dir / "absent.sock", timeout=2)
    try:
        assert not client.available()
        with pytest.raises(PodResourcesError, match="UNAVAILABLE"):
            client.list()
    finally:
        client.close()
