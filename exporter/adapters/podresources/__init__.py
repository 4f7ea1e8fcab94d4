"""The kubelet pod-resources v1 API: which container holds which device."""

from exporter.adapters.podresources.client import (
    DEFAULT_SOCKET as DEFAULT_SOCKET,
)
from exporter.adapters.podresources.client import (
    PodResourcesClient as PodResourcesClient,
)
from exporter.adapters.podresources.client import (
    PodResourcesError as PodResourcesError,
)
