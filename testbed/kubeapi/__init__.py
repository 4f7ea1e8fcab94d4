"""A fake Kubernetes API server that speaks the real REST wire protocol.

The real ``kubernetes`` client and ``kubectl`` work against it. It is pure
stdlib (no ``kubernetes`` import), serves loopback only, and is shared by
tests and the demo. See ``docs/fake-kubeapi.md``.
"""

from testbed.kubeapi.errors import ApiError
from testbed.kubeapi.faults import Fault, RequestRecord
from testbed.kubeapi.resources import BUILTIN_RESOURCES, ResourceType, ScaleSpec
from testbed.kubeapi.server import FakeKubeAPI, system_clock

__all__ = [
    "BUILTIN_RESOURCES",
    "ApiError",
    "FakeKubeAPI",
    "Fault",
    "RequestRecord",
    "ResourceType",
    "ScaleSpec",
    "system_clock",
]
