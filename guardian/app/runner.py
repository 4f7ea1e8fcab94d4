"""``guardian run``: the scheduler, the HTTP endpoint, SIGTERM and SIGHUP.

SIGTERM/SIGINT: stop scheduling, let the evaluation in progress finish, exit.
SIGHUP: reload the config and rule files; an invalid new config is logged and the
running one kept.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType

from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.controller import ControllerParts
from guardian.app.http_api import EngineHTTPServer, web_guard
from guardian.app.rules.build import (
    EngineParts,
    build_engine,
    compile_groups,
    prometheus_access,
    remote_write_client,
)
from guardian.app.rules.scheduler import GroupScheduler
from guardian.app.settings.config_file import Settings, load_settings
from guardian.engine.rules.alerting import TemplateEnv
from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)


class EngineRunner:
    def __init__(
        self,
        config_path: str,
        env: Mapping[str, str],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config_path = config_path
        self.env = dict(env)
        self.clock = clock
        self.settings: Settings = load_settings(config_path, self.env)
        guard = web_guard(self.settings.web)  # its files are checked before anything starts
        self.parts: EngineParts = build_engine(self.settings)
        self.controller = ControllerParts(
            self.settings, self.parts.engine, env=self.env, clock=clock
        )
        self.exit_code = 0
        self._stop = threading.Event()
        self._reload = threading.Event()
        self.scheduler = GroupScheduler(self.parts.engine, clock=clock)
        host, port = self.settings.listen_host_port
        self.http = EngineHTTPServer(self.parts.engine, host, port, guard)

    def request_stop(self, *_: object) -> None:
        self._stop.set()

    def leadership_lost(self) -> None:
        logger.error("lost the leader lease: stopping so that this replica cannot act")
        self.exit_code = 1
        self.request_stop()

    def request_reload(self, *_: object) -> None:
        self._reload.set()

    def install_signal_handlers(self) -> None:
        def stop(signum: int, _frame: FrameType | None) -> None:
            logger.info("received signal %s: finishing the current cycle", signum)
            self.request_stop()

        def reload(_signum: int, _frame: FrameType | None) -> None:
            self.request_reload()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGHUP, reload)

    def reload(self) -> bool:
        """Apply the config file as it is now. Returns False (and keeps the running
        config) if it is invalid."""
        try:
            settings = load_settings(self.config_path, self.env)
            groups = compile_groups(settings)
        except ConfigError as exc:
            logger.error("reload: keeping the running config; the new one is invalid:\n%s", exc)
            return False
        engine = self.parts.engine
        if settings.state_path != self.settings.state_path:
            logger.warning(
                "reload: state_path changes need a restart; keeping %s", self.settings.state_path
            )
        if (settings.listen_address, settings.web) != (
            self.settings.listen_address,
            self.settings.web,
        ):
            logger.warning("reload: listen_address and web changes need a restart")
        if settings.prometheus != self.settings.prometheus:
            querier = PrometheusQuerier(
                prometheus_access(settings), observer=engine.metrics.observe_query
            )
            old = self.parts.querier
            self.parts = EngineParts(engine, querier)
            engine.query = querier.query
            old.close()
        if settings.remote_write != self.settings.remote_write:
            old_rw = engine.remote_write
            try:
                engine.remote_write = (
                    remote_write_client(settings.remote_write) if settings.remote_write else None
                )
            except ConfigError as exc:
                logger.error("reload: remote write not changed: %s", exc)
            else:
                if old_rw is not None:
                    old_rw.close()
        engine.env = TemplateEnv(settings.external_labels, settings.external_url)
        engine.replace_groups(groups)
        self.controller.reload(settings)
        self.scheduler.reschedule()
        self.settings = settings
        logger.info("reload: %s rule group(s) loaded", len(groups))
        return True

    def run(self) -> int:
        engine = self.parts.engine
        found = engine.load_state()
        logger.info(
            "state %s: %s group(s) to restore; %s group(s) configured",
            self.settings.state_path,
            found,
            len(engine.groups),
        )
        self.http.start()
        host, port = self.http.address
        logger.info(
            "listening on %s://%s:%s (auth=%s)",
            self.http.scheme,
            host,
            port,
            self.http.guard.auth.enabled,
        )
        self.controller.start(on_leadership_lost=self.leadership_lost)
        self.scheduler.start()
        try:
            while not self._stop.is_set():
                if self._reload.wait(timeout=0.2):
                    self._reload.clear()
                    self.reload()
        finally:
            self.scheduler.shutdown(wait=True)
            self.controller.close()
            self.http.stop()
            self.parts.querier.close()
            engine.close()
            logger.info("stopped")
        return self.exit_code
