"""A real Prometheus on a loopback port, with backfilled history.

Tests, the `guardian rules test` harness, benchmarks and the demo all start
Prometheus through :func:`start_prometheus`. It writes a config, backfills
OpenMetrics input with ``promtool tsdb create-blocks-from openmetrics``, starts
the server on a free port with a private data directory and long retention,
and waits until ``/-/ready`` answers. :meth:`LocalPrometheus.stop` always ends
the process; the child also asks the kernel to end it if its parent dies.
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from guardian.adapters.local_process import (
    LOG_TAIL_BYTES,
    log_tail,
    spawn,
    stop_process,
    wait_ready,
)
from guardian_common.errors import GuardianError, PermanentError
from guardian_common.stop_on_exit import StopOnExit

logger = logging.getLogger(__name__)


class PrometheusNotInstalledError(PermanentError):
    """`prometheus` or `promtool` is not on PATH."""


class BackfillError(PermanentError):
    """promtool rejected the OpenMetrics input."""


class PrometheusStartError(GuardianError):
    """Prometheus exited or did not become ready in time."""


@dataclass(frozen=True)
class PrometheusBinaries:
    prometheus: str
    promtool: str

    @classmethod
    def find(cls, search_path: str | None = None) -> PrometheusBinaries:
        """Locate both binaries on ``search_path`` (default: PATH)."""
        found = {name: shutil.which(name, path=search_path) for name in ("prometheus", "promtool")}
        missing = [name for name, path in found.items() if path is None]
        if missing:
            raise PrometheusNotInstalledError(
                f"{' and '.join(missing)} not found on PATH; install Debian's package with "
                "`apt-get install -y prometheus` (the README's test command does this)"
            )
        return cls(prometheus=str(found["prometheus"]), promtool=str(found["promtool"]))


def backfill_openmetrics(
    promtool: str,
    openmetrics: str | Path,
    data_dir: Path,
    *,
    timeout: float = 120.0,
    max_block_duration: str | None = None,
) -> None:
    """Write blocks for ``openmetrics`` (text, or a path to a file) into ``data_dir``.

    ``max_block_duration`` (e.g. ``"72h"``) lets promtool write fewer, longer blocks than
    its default 2h ones: long histories then backfill and load in seconds.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    if isinstance(openmetrics, Path):
        source = openmetrics
    else:
        source = data_dir.parent / "backfill.om"
        source.write_text(openmetrics, encoding="utf-8")
    try:
        result = subprocess.run(  # noqa: S603 - fixed argv, no shell
            [
                promtool,
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                *([f"--max-block-duration={max_block_duration}"] if max_block_duration else []),
                str(source),
                str(data_dir),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise BackfillError(f"promtool backfill of {source} took over {timeout}s") from exc
    if result.returncode != 0:
        output = (result.stderr or result.stdout).strip()
        raise BackfillError(f"promtool could not backfill {source}: {output[-LOG_TAIL_BYTES:]}")


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LocalPrometheus(StopOnExit):
    """A running Prometheus. Use as a context manager or call :meth:`stop`."""

    url: str
    port: int
    workdir: Path
    data_dir: Path
    config_path: Path
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def is_running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self) -> str:
        return log_tail(self.log_path)

    def stop(self, timeout: float = 10.0) -> None:
        """End the process: SIGTERM, then SIGKILL after ``timeout`` seconds. Idempotent."""
        stop_process("prometheus", self.process, timeout)


@dataclass(frozen=True)
class PrometheusOptions:
    """What the started Prometheus loads and how it runs."""

    rule_files: Sequence[Path] = ()
    openmetrics: str | Path | None = None
    evaluation_interval: str = "1m"
    scrape_interval: str = "1m"
    scrape_configs: Sequence[Mapping[str, Any]] = ()
    external_labels: Mapping[str, str] = field(default_factory=dict)
    alerting: Mapping[str, Any] | None = None  # the config's `alerting:` section, as is
    remote_write_receiver: bool = True
    extra_args: Sequence[str] = ()
    ready_timeout: float = 30.0
    backfill_block_duration: str | None = None  # promtool's --max-block-duration
    retention: str = "100y"


def _write_config(options: PrometheusOptions, path: Path) -> None:
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": options.scrape_interval,
            "evaluation_interval": options.evaluation_interval,
        },
        "rule_files": [str(Path(p).resolve()) for p in options.rule_files],
        "scrape_configs": [dict(c) for c in options.scrape_configs],
    }
    if options.external_labels:
        config["global"]["external_labels"] = dict(options.external_labels)
    if options.alerting is not None:
        config["alerting"] = dict(options.alerting)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _argv(
    binaries: PrometheusBinaries, options: PrometheusOptions, paths: dict[str, Path], port: int
) -> list[str]:
    argv = [
        binaries.prometheus,
        f"--config.file={paths['config']}",
        f"--storage.tsdb.path={paths['data']}",
        # Retention counts back from the newest block, and backfilled history
        # may be years old: keep everything for the life of the process.
        f"--storage.tsdb.retention.time={options.retention}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--web.enable-lifecycle",
        "--web.enable-admin-api",
    ]
    if options.remote_write_receiver:
        argv.append("--web.enable-remote-write-receiver")
    argv.extend(options.extra_args)
    return argv


def _wait_ready(prom: LocalPrometheus, timeout: float) -> None:
    wait_ready("prometheus", prom.url, prom.process, prom.log_path, timeout, PrometheusStartError)


def start_prometheus(
    workdir: Path,
    options: PrometheusOptions | None = None,
    *,
    binaries: PrometheusBinaries | None = None,
    attempts: int = 3,
) -> LocalPrometheus:
    """Backfill, start and wait for a Prometheus that lives in ``workdir``.

    A free port is picked just before the start; if another process takes it in
    between, the start is retried on a new port up to ``attempts`` times.
    """
    options = options or PrometheusOptions()
    binaries = binaries or PrometheusBinaries.find()
    workdir.mkdir(parents=True, exist_ok=True)
    paths = {
        "config": workdir / "prometheus.yml",
        "data": workdir / "data",
        "log": workdir / "prometheus.log",
    }
    _write_config(options, paths["config"])
    if options.openmetrics is not None:
        backfill_openmetrics(
            binaries.promtool,
            options.openmetrics,
            paths["data"],
            max_block_duration=options.backfill_block_duration,
        )
    last_error: PrometheusStartError | None = None
    for _ in range(attempts):
        port = free_loopback_port()
        process = spawn(_argv(binaries, options, paths, port), workdir, paths["log"])
        prom = LocalPrometheus(
            url=f"http://127.0.0.1:{port}",
            port=port,
            workdir=workdir,
            data_dir=paths["data"],
            config_path=paths["config"],
            log_path=paths["log"],
            process=process,
        )
        try:
            _wait_ready(prom, options.ready_timeout)
        except PrometheusStartError as exc:
            prom.stop()
            last_error = exc
            if "address already in use" not in str(exc):
                raise
            continue
        except BaseException:
            prom.stop()
            raise
        logger.debug("prometheus pid %s ready at %s", prom.pid, prom.url)
        return prom
    raise last_error or PrometheusStartError("no start attempt was made")
