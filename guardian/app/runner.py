"""``guardian run``: the scheduler, the HTTP endpoint, SIGTERM, SIGHUP and edited files.

SIGTERM/SIGINT: stop scheduling, let the evaluation in progress finish, exit.
SIGHUP, or an edit of the config, rule or policy files (polled by content every
``reload.poll_interval``): reload them. The new files are checked whole first; if any
is invalid the error is logged, ``guardian_config_last_reload_successful`` drops to 0
and the running config stays. Alert state, the ledger and the outbox are kept.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Mapping
from types import FrameType

from prometheus_client import CollectorRegistry, Gauge

from guardian.adapters.http_credentials import check_client_files
from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.config_watch import ConfigWatch
from guardian.app.controller import ControllerParts
from guardian.app.http_api import EngineHTTPServer, web_guard
from guardian.app.rules.build import (
    EngineParts,
    build_engine,
    compile_groups,
    prometheus_access,
    query_sharding,
    remote_write_client,
)
from guardian.app.rules.scheduler import GroupScheduler
from guardian.app.rules.thread_fan_out import ThreadFanOut
from guardian.app.settings.config_file import Settings, load_settings
from guardian.app.settings.web import WebSettings
from guardian.engine.rules.compiled import TemplateEnv
from guardian_common.errors import ConfigError
from guardian_common.files import CERTIFICATE, MAX_FILE_BYTES, check_file

logger = logging.getLogger(__name__)


class ReloadMetrics:
    """Prometheus's names, so the same alert on a failed reload works for both."""

    def __init__(self, registry: CollectorRegistry, now: float) -> None:
        self.successful = Gauge(
            "guardian_config_last_reload_successful",
            "Whether the last config reload (SIGHUP or an edited file) succeeded.",
            registry=registry,
        )
        self.success_time = Gauge(
            "guardian_config_last_reload_success_timestamp_seconds",
            "When the config was last loaded successfully (the start counts).",
            registry=registry,
        )
        self.record(True, now)

    def record(self, ok: bool, now: float) -> None:
        self.successful.set(1 if ok else 0)
        if ok:
            self.success_time.set(now)


def watched_files(config_path: str, settings: Settings) -> list[str]:
    """The files (and globs) whose edits reload the config."""
    return [config_path, *settings.rule_files, *settings.remediation.policy_files]


def check_web_files(web: WebSettings) -> None:
    """The endpoint's certificate and key are regular files within their limit: the TLS
    library would open a FIFO blocking and read ``/dev/zero`` to the end. Raises
    FileReadError naming the file and the setting."""
    for field, path in (
        ("web.tls_cert_file", web.tls_cert_file),
        ("web.tls_key_file", web.tls_key_file),
    ):
        if path is not None:
            check_file(path, CERTIFICATE, field=field)


def watched_bytes(settings: Settings) -> int:
    """The largest a watched file may be: a rule file's limit, at least every other's."""
    return max(settings.max_rule_file_bytes, MAX_FILE_BYTES)


class EngineRunner:
    def __init__(
        self,
        config_path: str,
        env: Mapping[str, str],
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config_path = config_path
        self.env = dict(env)
        self.clock = clock
        self.monotonic = monotonic
        self.settings: Settings = load_settings(config_path, self.env)
        check_web_files(self.settings.web)
        check_client_files(self.settings.prometheus.client_config(), "prometheus")
        guard = web_guard(self.settings.web)  # its files are checked before anything starts
        self.parts: EngineParts = build_engine(self.settings, clock=clock)
        engine = self.parts.engine
        self.controller = ControllerParts(
            self.settings,
            engine,
            env=self.env,
            clock=clock,
            # Through the current querier: a reload may replace it.
            range_query=lambda e, start, end, step: self.parts.querier.query_range(
                e, start, end, step
            ),
        )
        # One writer of ALERTS/ALERTS_FOR_STATE: two could disagree on a value after a
        # restore, and the receiver refuses a second value at the same timestamp.
        engine.may_write = self.controller.is_leader
        self.reload_metrics = ReloadMetrics(engine.metrics.registry, clock())
        self.watch = ConfigWatch(
            watched_files(config_path, self.settings), watched_bytes(self.settings)
        )
        self.exit_code = 0
        self._stop = threading.Event()
        self._reload = threading.Event()
        self.scheduler = GroupScheduler(engine, clock=clock)
        host, port = self.settings.listen_host_port
        self.http = EngineHTTPServer(
            engine,
            host,
            port,
            guard,
            status=self.controller.status,
            explain=self.controller.explain,
        )

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

    def poll_files(self) -> bool | None:
        """Reload if a watched file changed. Returns the reload's result, None if none."""
        if not self.watch.changed():
            return None
        logger.info("reload: a watched file changed")
        return self.reload()

    def reload(self) -> bool:
        """Apply the files as they are now, all or nothing. Returns False (and keeps the
        running config) if any is invalid."""
        try:
            settings = load_settings(self.config_path, self.env)
            groups = compile_groups(settings)
            apply_controller = self.controller.prepare_reload(settings, groups)
        except ConfigError as exc:
            logger.error("reload: keeping the running config; the new one is invalid:\n%s", exc)
            self.reload_metrics.record(False, self.clock())
            return False
        engine = self.parts.engine
        if (settings.listen_address, settings.web) != (
            self.settings.listen_address,
            self.settings.web,
        ):
            logger.warning("reload: listen_address and web changes need a restart")
        if settings.prometheus != self.settings.prometheus:
            self._replace_querier(settings)
        limit = settings.prometheus.concurrent_queries
        if limit != self.settings.prometheus.concurrent_queries:
            self._replace_fan_out(limit)
        if settings.remote_write != self.settings.remote_write:
            self._replace_remote_write(settings)
        engine.env = TemplateEnv(settings.external_labels, settings.external_url)
        engine.replace_groups(groups)
        apply_controller()
        self.scheduler.reschedule()
        self.settings = settings
        self.watch.watch(watched_files(self.config_path, settings), watched_bytes(settings))
        self.reload_metrics.record(True, self.clock())
        logger.info("reload: %s rule group(s) loaded", len(groups))
        return True

    def _replace_querier(self, settings: Settings) -> None:
        engine = self.parts.engine
        querier = PrometheusQuerier(
            prometheus_access(settings), observer=engine.metrics.observe_query
        )
        old = self.parts.querier
        self.parts = EngineParts(engine, querier)
        engine.query = querier.query
        engine.sharding = query_sharding(settings, querier)
        if engine.prometheus_restore is not None:
            engine.prometheus_restore.querier = querier
        old.close()

    def _replace_fan_out(self, limit: int) -> None:
        engine = self.parts.engine
        # An evaluation still holding the old one finishes in its own thread.
        old, engine.fan_out = engine.fan_out, ThreadFanOut(limit)
        close = getattr(old, "close", None)
        if close is not None:
            close()

    def _replace_remote_write(self, settings: Settings) -> None:
        engine = self.parts.engine
        old = engine.remote_write
        try:
            engine.remote_write = (
                remote_write_client(settings.remote_write) if settings.remote_write else None
            )
        except ConfigError as exc:
            logger.error("reload: remote write not changed: %s", exc)
            return
        if old is not None:
            old.close()

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
        next_poll = self.monotonic()
        try:
            while not self._stop.is_set():
                if self._reload.wait(timeout=0.2):
                    self._reload.clear()
                    self.watch.changed()  # what SIGHUP applies is not a change to poll
                    self.reload()
                interval = self.settings.reload.poll_interval
                if interval > 0 and self.monotonic() >= next_poll:
                    next_poll = self.monotonic() + interval
                    self.poll_files()
        finally:
            self.scheduler.shutdown(wait=True)
            self.controller.close()
            self.http.stop()
            self.parts.querier.close()
            engine.close()
            logger.info("stopped")
        return self.exit_code
