"""Wiring for ``guardian-exporter serve``: settings in, collector and server running."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from exporter.adapters.nvml import NvmlBackend
from exporter.adapters.procfs import ProcReader
from exporter.adapters.users import load_users
from exporter.adapters.vgpu_config import load_vgpu_ratios
from exporter.app.collector import Collector, SnapshotStore
from exporter.app.render import RenderTimer
from exporter.app.server import ExporterApp, HttpServer
from exporter.app.settings import ExporterSettings
from exporter.engine.vgpu import VgpuRatios
from exporter.model.backend import CgroupReader, GpuBackend
from exporter.model.errors import ConfigError
from exporter.sim.backend import ScenarioCgroups, SimulatedBackend
from exporter.sim.scenario import load_scenario

logger = logging.getLogger(__name__)


class Exporter:
    """Everything `serve` runs. Building it validates every file; ConfigError on bad input."""

    def __init__(self, settings: ExporterSettings) -> None:
        self.settings = settings
        ratios = (
            load_vgpu_ratios(settings.vgpu_config, settings.vgpu_ratio)
            if settings.vgpu_config is not None
            else VgpuRatios(default=settings.vgpu_ratio)
        )
        users = (
            load_users(settings.basic_auth_users_file)
            if settings.basic_auth_users_file is not None
            else None
        )
        backend: GpuBackend
        cgroups: CgroupReader
        if settings.backend == "simulated":
            if settings.scenario is None:  # the settings validator already refuses this
                raise ConfigError("the simulated backend needs --scenario FILE", field="--scenario")
            scenario = load_scenario(settings.scenario)
            backend = SimulatedBackend(scenario, time.time)
            cgroups = (
                ScenarioCgroups(scenario)
                if settings.proc_root is None
                else ProcReader(settings.proc_root)
            )
        else:
            backend = NvmlBackend()
            cgroups = ProcReader(settings.proc_root or Path("/proc"))
        self.store = SnapshotStore()
        timer = RenderTimer()
        self.collector = Collector(
            backend,
            cgroups,
            self.store,
            node=settings.node_name,
            ratios=ratios,
            interval=settings.interval,
            timeout=settings.timeout,
            backoff_max=settings.nvml_backoff_max,
            render_timer=timer,
        )
        app = ExporterApp(
            self.store,
            max_requests=settings.max_requests,
            users=users,
            healthy=lambda: self.collector.alive,
        )
        self.server = HttpServer(
            app,
            settings.listen_address,
            settings.port,
            certfile=None if settings.tls_cert_file is None else str(settings.tls_cert_file),
            keyfile=None if settings.tls_key_file is None else str(settings.tls_key_file),
        )

    def start(self) -> None:
        self.server.start()
        self.collector.start()
        logger.info(
            "serving %s backend on %s:%s (tls=%s, auth=%s)",
            self.settings.backend,
            self.settings.listen_address,
            self.server.port,
            self.settings.tls_cert_file is not None,
            self.settings.basic_auth_users_file is not None,
        )

    def stop(self) -> None:
        self.server.stop()
        self.collector.stop()


def run(exporter: Exporter, stop: threading.Event) -> int:
    """Serve until ``stop`` is set (the CLI sets it on SIGTERM and SIGINT)."""
    exporter.start()
    try:
        stop.wait()
    finally:
        exporter.stop()
    return 0
