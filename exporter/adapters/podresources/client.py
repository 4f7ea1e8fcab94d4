"""A client for the kubelet's pod-resources ``List`` call over its unix socket."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import grpc

from exporter.adapters.podresources import _api_pb2, _api_pb2_grpc
from exporter.model.allocation import ContainerDevices
from exporter.model.errors import ExporterError

logger = logging.getLogger(__name__)

DEFAULT_SOCKET = Path("/var/lib/kubelet/pod-resources/kubelet.sock")
# The kubelet refuses messages over 16 MiB; a big node's answer can be several MiB.
_MAX_MESSAGE_BYTES = 16 * 1024 * 1024


class PodResourcesError(ExporterError):
    """The List call failed. Transient: the next cycle tries again on the same channel."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code


class PodResourcesClient:
    """One persistent channel to the kubelet; every call has a deadline.

    gRPC reconnects the channel by itself when the kubelet restarts, so the
    channel is created once and only closed with the client.
    """

    def __init__(self, socket_path: Path = DEFAULT_SOCKET, *, timeout: float = 10.0) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self._lock = threading.Lock()
        self._channel: grpc.Channel | None = None
        self._stub: _api_pb2_grpc.PodResourcesListerStub | None = None

    def available(self) -> bool:
        """True if the socket exists; without it the exporter falls back to pod limits."""
        return self.socket_path.is_socket()

    def _lister(self) -> _api_pb2_grpc.PodResourcesListerStub:
        with self._lock:
            if self._stub is None:
                self._channel = grpc.insecure_channel(
                    f"unix://{self.socket_path}",
                    options=[("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES)],
                )
                self._stub = _api_pb2_grpc.PodResourcesListerStub(  # type: ignore[no-untyped-call]
                    self._channel
                )
            return self._stub

    def list(self) -> list[ContainerDevices]:
        """Every container's devices on this node, flattened."""
        try:
            response = self._lister().List(_api_pb2.ListPodResourcesRequest(), timeout=self.timeout)
        except grpc.RpcError as exc:
            # Errors raised by a call are also grpc.Call objects that carry the status.
            status = getattr(exc, "code", None)
            code = status().name if callable(status) else "UNKNOWN"
            raise PodResourcesError(
                f"pod-resources List on {self.socket_path} failed: {code}", code=code
            ) from exc
        return [
            ContainerDevices(
                namespace=pod.namespace,
                pod=pod.name,
                container=container.name,
                resource=devices.resource_name,
                device_ids=tuple(devices.device_ids),
            )
            for pod in response.pod_resources
            for container in pod.containers
            for devices in container.devices
        ]

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
            self._channel = None
            self._stub = None
