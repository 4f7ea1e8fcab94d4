"""Wiring for ``guardian-exporter serve``: settings in, collection loop and server running."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from exporter.adapters.kube_cluster import read_cluster_uid
from exporter.adapters.kube_pods import PodWatcher
from exporter.adapters.nvml import NvmlBackend
from exporter.adapters.podresources import PodResourcesClient
from exporter.adapters.procfs import ProcReader
from exporter.adapters.vgpu_config import load_vgpu_ratios
from exporter.app.cluster_identity import ClusterUid
from exporter.app.collection import CollectionLoop, CollectionTiming, NodeSources, SnapshotStore
from exporter.app.kube_enrich import KubeEnricher
from exporter.app.metrics import RenderTimer
from exporter.app.server import REQUEST_TIMEOUT_S, ExporterApp, HttpServer, connection_limit
from exporter.app.settings import ExporterSettings
from exporter.engine.observation import ObservationSetup
from exporter.engine.snapshot_builder import SnapshotSetup
from exporter.engine.vgpu import VgpuRatios
from exporter.model.errors import ConfigError
from guardian_common.files import CERTIFICATE, check_file
from guardian_common.http_auth import Authenticator, load_users
from guardian_common.http_server import ServerLimits, ServerTls
from guardian_common.kubeconfig import load_kubeconfig

logger = logging.getLogger(__name__)


SourcesFactory = Callable[[ExporterSettings], NodeSources]


def nvml_sources(settings: ExporterSettings) -> NodeSources:
    """The node's own driver and /proc (the only sources the product ships)."""
    return NodeSources(NvmlBackend(), ProcReader(settings.proc_root or Path("/proc")))


def observation_setup(settings: ExporterSettings) -> ObservationSetup:
    # Readings further apart than 3 intervals are a gap: one slow or missed cycle is not.
    return ObservationSetup(
        activity_floor=settings.activity_floor,
        gap_seconds=3 * settings.interval,
        memory_peak_window=settings.memory_peak_window,
        activity_peak_window=settings.activity_peak_window,
        mig_memory_floor=settings.mig_memory_floor_mib * 1024 * 1024,
    )


class Exporter:
    """Everything `serve` runs. Building it validates every file; ConfigError on bad input."""

    def __init__(
        self,
        settings: ExporterSettings,
        env: Mapping[str, str] | None = None,
        sources: SourcesFactory = nvml_sources,
    ) -> None:
        self.settings = settings
        self.enricher = _kube_enricher(settings) if settings.kubernetes_enabled(env or {}) else None
        ratios = (
            load_vgpu_ratios(settings.vgpu_config, settings.vgpu_ratio)
            if settings.vgpu_config is not None
            else VgpuRatios(default=settings.vgpu_ratio)
        )
        node = sources(settings)
        self.backend_name = node.backend.name
        self.store = SnapshotStore()
        timer = RenderTimer()
        self.collection = CollectionLoop(
            node,
            self.store,
            SnapshotSetup(
                settings.node_name,
                ratios,
                cluster=settings.cluster_name,
                observation=observation_setup(settings),
            ),
            CollectionTiming(settings.interval, settings.timeout, settings.nvml_backoff_max),
            render_timer=timer,
            enricher=self.enricher,
        )
        self.server = _http_server(settings, self.store, lambda: self.collection.alive)

    def start(self) -> None:
        if self.enricher is not None:
            self.enricher.start()
        self.server.start()
        self.collection.start()
        logger.info(
            "serving %s backend on %s:%s (tls=%s, auth=%s)",
            self.backend_name,
            self.settings.listen_address,
            self.server.port,
            self.settings.tls_cert_file is not None,
            self.settings.basic_auth_users_file is not None,
        )

    def stop(self) -> None:
        self.server.stop()
        self.collection.stop()
        if self.enricher is not None:
            self.enricher.stop()


def _http_server(
    settings: ExporterSettings, store: SnapshotStore, healthy: Callable[[], bool]
) -> HttpServer:
    """The /metrics server with the auth, TLS and limits the settings ask for."""
    users = settings.basic_auth_users_file
    auth = Authenticator(
        load_users(users) if users is not None else None,
        failures_per_minute=settings.auth_failures_per_minute,
        realm="guardian-exporter",
    )
    tls = None
    if settings.tls_cert_file is not None and settings.tls_key_file is not None:
        # Regular files within their limit: ssl would block on a FIFO, read /dev/zero.
        check_file(settings.tls_cert_file, CERTIFICATE, field="--tls-cert-file")
        check_file(settings.tls_key_file, CERTIFICATE, field="--tls-key-file")
        tls = ServerTls(settings.tls_cert_file, settings.tls_key_file, field="--tls-cert-file")
    app = ExporterApp(store, max_requests=settings.max_requests, auth=auth, healthy=healthy)
    limits = ServerLimits(
        max_connections=connection_limit(settings.max_requests),
        request_timeout=REQUEST_TIMEOUT_S,
        backlog=settings.listen_backlog,
    )
    return HttpServer(app, settings.listen_address, settings.port, tls=tls, limits=limits)


def _kubeconfig(path: Path) -> dict[str, Any]:
    try:
        return load_kubeconfig([str(path)])
    except ConfigError as exc:  # naming the flag too
        field = f"--kubeconfig {exc.field}" if exc.field else "--kubeconfig"
        raise ConfigError(exc.reason, path=exc.path, line=exc.line, field=field) from None


def _api_client(kubeconfig: Path | None) -> Any:
    try:
        if kubeconfig is not None:
            # Read the bounded way (a FIFO, /dev/zero or a deep file is a ConfigError
            # naming it); the client only gets the parsed dict.
            config = _kubeconfig(kubeconfig)
            return k8s_config.new_client_from_config_dict(config, persist_config=False)
        configuration = k8s_client.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)
        return k8s_client.ApiClient(configuration)
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
        # What the client's loader raises for a kubeconfig it cannot use.
        where = str(kubeconfig) if kubeconfig is not None else "in-cluster service account"
        raise ConfigError(
            f"cannot load Kubernetes credentials ({where}): {exc}", field="--kubeconfig"
        ) from exc


def _kube_enricher(settings: ExporterSettings) -> KubeEnricher:
    api_client = _api_client(settings.kubeconfig)
    api = k8s_client.CoreV1Api(api_client)
    watcher = PodWatcher(api, settings.node_name, request_timeout=settings.kube_timeout)
    kubelet = PodResourcesClient(settings.pod_resources_socket, timeout=settings.kube_timeout)
    return KubeEnricher(
        watcher,
        kubelet,
        settings.grouping(),
        frozenset(settings.extra_gpu_resources),
        on_close=api_client.close,
        cluster_uid=ClusterUid(partial(read_cluster_uid, api, settings.kube_timeout)),
    )


def run(exporter: Exporter, stop: threading.Event) -> int:
    """Serve until ``stop`` is set (the CLI sets it on SIGTERM and SIGINT)."""
    exporter.start()
    try:
        stop.wait()
    finally:
        exporter.stop()
    return 0
