"""A fake kubelet serving the pod-resources v1 ``List`` call on a unix socket.

It is a real gRPC server speaking the published protobuf messages, so the
exporter's real client runs against it in tests and in the demo.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from concurrent import futures
from pathlib import Path
from typing import Self

import grpc

from exporter.adapters.podresources import _api_pb2, _api_pb2_grpc
from exporter.model.allocation import ContainerDevices
from guardian_common.stop_on_exit import StopOnExit


class _Lister(_api_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, kubelet: FakeKubelet) -> None:
        self._kubelet = kubelet

    def List(
        self, request: _api_pb2.ListPodResourcesRequest, context: grpc.ServicerContext
    ) -> _api_pb2.ListPodResourcesResponse:
        fault = self._kubelet.take_fault()
        if fault is not None:
            context.abort(fault, "injected fault")
        return self._kubelet.response()


class FakeKubelet(StopOnExit):
    """Serves whatever containers :meth:`set_devices` was last given."""

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.calls = 0
        self._lock = threading.Lock()
        self._devices: tuple[ContainerDevices, ...] = ()
        self._faults: list[grpc.StatusCode] = []
        self._server: grpc.Server | None = None

    def start(self) -> Self:
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        _api_pb2_grpc.add_PodResourcesListerServicer_to_server(  # type: ignore[no-untyped-call]
            _Lister(self), server
        )
        server.add_insecure_port(f"unix://{self.socket_path}")
        server.start()
        self._server = server
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(grace=None).wait(timeout=5)
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def set_devices(self, devices: Iterable[ContainerDevices]) -> None:
        with self._lock:
            self._devices = tuple(devices)

    def fail_next(self, codes: Sequence[grpc.StatusCode]) -> None:
        """Answer the next calls with these status codes, one each."""
        with self._lock:
            self._faults.extend(codes)

    def take_fault(self) -> grpc.StatusCode | None:
        with self._lock:
            self.calls += 1
            return self._faults.pop(0) if self._faults else None

    def response(self) -> _api_pb2.ListPodResourcesResponse:
        with self._lock:
            devices = self._devices
        pods: dict[tuple[str, str], dict[str, list[ContainerDevices]]] = {}
        for entry in devices:
            pods.setdefault((entry.namespace, entry.pod), {}).setdefault(
                entry.container, []
            ).append(entry)
        return _api_pb2.ListPodResourcesResponse(
            pod_resources=[
                _api_pb2.PodResources(
                    name=pod,
                    namespace=namespace,
                    containers=[
                        _api_pb2.ContainerResources(
                            name=container,
                            devices=[
                                _api_pb2.ContainerDevices(
                                    resource_name=e.resource, device_ids=list(e.device_ids)
                                )
                                for e in entries
                            ],
                        )
                        for container, entries in containers.items()
                    ],
                )
                for (namespace, pod), containers in pods.items()
            ]
        )
