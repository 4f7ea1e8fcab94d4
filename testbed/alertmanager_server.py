"""A real Alertmanager on a loopback port, and ``amtool`` against it.

Tests and the demo start Debian's ``prometheus-alertmanager`` (0.25) through
:func:`start_alertmanager`: it writes the config (a single null receiver unless one is
given), starts the server on a free port with a private storage directory and clustering
off, and waits until ``/-/ready`` answers. :meth:`LocalAlertmanager.stop` always ends the
process, and the child asks the kernel to end it if its parent dies. ``restart`` brings it
back on the same port with the same storage (silences survive, alerts do not, as for a
real restart).
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from guardian.adapters.local_process import log_tail, spawn, stop_process, wait_ready
from guardian.adapters.local_prometheus import free_loopback_port
from guardian_common.errors import GuardianError, PermanentError
from guardian_common.stop_on_exit import StopOnExit

logger = logging.getLogger(__name__)


NULL_CONFIG = """\
route:
  receiver: "null"
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: "null"
"""


class AlertmanagerNotInstalledError(PermanentError):
    """`prometheus-alertmanager` (or `alertmanager`) or `amtool` is not on PATH."""


class AlertmanagerStartError(GuardianError):
    """Alertmanager exited or did not become ready in time."""


class AmtoolError(GuardianError):
    """amtool exited non-zero."""


@dataclass(frozen=True)
class AlertmanagerBinaries:
    alertmanager: str
    amtool: str

    @classmethod
    def find(cls, search_path: str | None = None) -> AlertmanagerBinaries:
        """Debian names the server ``prometheus-alertmanager``; upstream ``alertmanager``."""
        server = shutil.which("prometheus-alertmanager", path=search_path) or shutil.which(
            "alertmanager", path=search_path
        )
        amtool = shutil.which("amtool", path=search_path)
        if server is None or amtool is None:
            missing = [n for n, p in (("alertmanager", server), ("amtool", amtool)) if p is None]
            raise AlertmanagerNotInstalledError(
                f"{' and '.join(missing)} not found on PATH; install Debian's package with "
                "`apt-get install -y prometheus-alertmanager` (scripts/ensure-alertmanager)"
            )
        return cls(alertmanager=server, amtool=amtool)


@dataclass
class LocalAlertmanager(StopOnExit):
    """A running Alertmanager. Use as a context manager or call :meth:`stop`."""

    url: str
    port: int
    workdir: Path
    config_path: Path
    log_path: Path
    binaries: AlertmanagerBinaries
    process: subprocess.Popen[bytes] = field(repr=False)
    ready_timeout: float = 30.0

    @property
    def pid(self) -> int:
        return self.process.pid

    def is_running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self) -> str:
        return log_tail(self.log_path)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` seconds. Idempotent."""
        stop_process("alertmanager", self.process, timeout)

    def restart(self) -> None:
        """Stop, then start again on the same port with the same storage and config."""
        self.stop()
        self.process = _spawn(self.binaries, self.workdir, self.config_path, self.port)
        _wait_ready(self, self.ready_timeout)

    def amtool(self, *args: str, timeout: float = 30.0) -> str:
        """Run ``amtool --alertmanager.url=<this> args...``; its stdout. AmtoolError on failure."""
        return run_amtool(
            self.binaries.amtool, f"--alertmanager.url={self.url}", *args, timeout=timeout
        )


def run_amtool(amtool: str, *args: str, timeout: float = 30.0) -> str:
    result = subprocess.run(  # noqa: S603 - fixed argv, no shell
        [amtool, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        output = f"{result.stdout.strip()}\n{result.stderr.strip()}".strip()
        raise AmtoolError(f"amtool {' '.join(args)}: {output}")
    return result.stdout


def _spawn(
    binaries: AlertmanagerBinaries, workdir: Path, config: Path, port: int
) -> subprocess.Popen[bytes]:
    argv = [
        binaries.alertmanager,
        f"--config.file={config}",
        f"--storage.path={workdir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip: a test instance stands alone
        "--log.level=debug",
    ]
    return spawn(argv, workdir, workdir / "alertmanager.log")


def _wait_ready(am: LocalAlertmanager, timeout: float) -> None:
    wait_ready("alertmanager", am.url, am.process, am.log_path, timeout, AlertmanagerStartError)


def start_alertmanager(
    workdir: Path,
    config: str = NULL_CONFIG,
    *,
    binaries: AlertmanagerBinaries | None = None,
    attempts: int = 3,
    ready_timeout: float = 30.0,
) -> LocalAlertmanager:
    """Write ``config``, start and wait for an Alertmanager that lives in ``workdir``.

    A port taken between picking and binding is retried on a new one, ``attempts`` times.
    """
    binaries = binaries or AlertmanagerBinaries.find()
    workdir.mkdir(parents=True, exist_ok=True)
    config_path = workdir / "alertmanager.yml"
    config_path.write_text(config, encoding="utf-8")
    last_error: AlertmanagerStartError | None = None
    for _ in range(attempts):
        port = free_loopback_port()
        am = LocalAlertmanager(
            url=f"http://127.0.0.1:{port}",
            port=port,
            workdir=workdir,
            config_path=config_path,
            log_path=workdir / "alertmanager.log",
            binaries=binaries,
            process=_spawn(binaries, workdir, config_path, port),
            ready_timeout=ready_timeout,
        )
        try:
            _wait_ready(am, ready_timeout)
        except AlertmanagerStartError as exc:
            am.stop()
            last_error = exc
            if "address already in use" not in str(exc):
                raise
            continue
        except BaseException:
            am.stop()
            raise
        logger.debug("alertmanager pid %s ready at %s", am.pid, am.url)
        return am
    raise last_error or AlertmanagerStartError("no start attempt was made")


def check_config(path: Path, binaries: AlertmanagerBinaries | None = None) -> str:
    """``amtool check-config PATH``: its report; AmtoolError when the config is invalid."""
    binaries = binaries or AlertmanagerBinaries.find()
    return run_amtool(binaries.amtool, "check-config", str(path))
