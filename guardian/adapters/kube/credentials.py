"""Kubernetes credentials, loaded the standard way, and failures said in one line.

The kubeconfig is read the bounded way (:mod:`guardian_common.kubeconfig`): a FIFO, a
device, an oversized, non-UTF-8 or deeply nested file is one line naming it.

Order: ``--kubeconfig`` (or ``remediation.kubeconfig``) if given; else the in-cluster
service account when running in a pod; else ``$KUBECONFIG`` (a list of files, as
kubectl reads it); else ``~/.kube/config``. ``--context`` picks a kubeconfig context
(and so skips the in-cluster account). Every way this can fail, and every way the first
call can fail (unreachable server, bad TLS, no permission), is a KubeAccessError whose
message names what failed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client as k8s_client
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader
from kubernetes.config.kube_config import (
    ENV_KUBECONFIG_PATH_SEPARATOR,
    new_client_from_config_dict,
)

from guardian.adapters.kube.rest import Forbidden, Unavailable
from guardian_common.errors import ConfigError, PermanentError
from guardian_common.kubeconfig import load_kubeconfig

logger = logging.getLogger(__name__)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
_IN_CLUSTER_ENV = ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT")


class KubeAccessError(PermanentError):
    """No usable credentials, or the API server cannot be reached or refuses us.
    Retrying as is cannot help; the message says what to fix."""


@dataclass(frozen=True)
class KubeCredentials:
    """Where credentials come from. ``env`` and ``home`` are the caller's (the CLI
    passes the process's); ``service_account_dir`` is where a pod's token is mounted."""

    kubeconfig: str | None = None
    context: str | None = None
    env: Mapping[str, str] | None = None
    home: Path | None = None
    service_account_dir: Path = SERVICE_ACCOUNT_DIR

    def source(self) -> tuple[str, str | None]:
        """(what will be used, in words; the kubeconfig path list, None for in-cluster)."""
        env = self.env or {}
        if self.kubeconfig:
            return f"kubeconfig {self.kubeconfig}", self.kubeconfig
        in_pod = all(env.get(name) for name in _IN_CLUSTER_ENV)
        if in_pod and self.context is None and (self.service_account_dir / "token").exists():
            return "the in-cluster service account", None
        if env.get("KUBECONFIG"):
            return f"$KUBECONFIG ({env['KUBECONFIG']})", env["KUBECONFIG"]
        home = self.home if self.home is not None else _home(env)
        default = home / ".kube" / "config"
        if default.exists():
            return f"kubeconfig {default}", str(default)
        pod = f"no service account token in {self.service_account_dir}" if in_pod else ""
        raise KubeAccessError(
            f"no Kubernetes credentials: {pod or 'not running in a pod'}, $KUBECONFIG is "
            f"unset and {default} does not exist (pass --kubeconfig)"
        )


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def load_api_client(credentials: KubeCredentials, *, retries: int | None = None) -> Any:
    """A ``kubernetes`` ApiClient from ``credentials``; raises KubeAccessError.
    ``retries``: connection retries (None: urllib3's default; a command uses 0 and fails
    at once, in one line)."""
    configuration = k8s_client.Configuration()
    configuration.retries = retries
    what, paths = credentials.source()
    if paths is None:
        return _in_cluster(credentials, configuration)
    files = [p for p in paths.split(ENV_KUBECONFIG_PATH_SEPARATOR) if p]
    if not any(os.path.lexists(os.path.expanduser(p)) for p in files):
        raise KubeAccessError(f"{what}: no such file")
    try:
        # Read and parsed the bounded way; the client only gets the merged dict.
        config = load_kubeconfig(files)
        api_client = new_client_from_config_dict(
            config,
            context=credentials.context,
            persist_config=False,
            client_configuration=configuration,
        )
    except ConfigError as exc:
        raise KubeAccessError(f"{what}: {_located(exc, files)}") from None
    except (ConfigException, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        # What the client's loader raises for a file it cannot use.
        raise KubeAccessError(f"{what}: {_one_line(exc)}") from exc
    logger.debug("Kubernetes API %s, from %s", api_client.configuration.host, what)
    return api_client


def _in_cluster(credentials: KubeCredentials, configuration: Any) -> Any:
    sa = credentials.service_account_dir
    loader = InClusterConfigLoader(
        token_filename=str(sa / "token"),
        cert_filename=str(sa / "ca.crt"),
        environ=dict(credentials.env or {}),
    )
    try:
        loader.load_and_set(configuration)
    except (ConfigException, OSError) as exc:
        raise KubeAccessError(f"the in-cluster service account: {_one_line(exc)}") from exc
    logger.debug("Kubernetes API %s, from the in-cluster service account", configuration.host)
    return k8s_client.ApiClient(configuration)


def _located(exc: ConfigError, files: list[str]) -> str:
    """``exc`` after ``what`` has named the file: its line, field and reason; the file
    too when ``what`` lists several."""
    if exc.path is None or [os.path.expanduser(f) for f in files] != [exc.path]:
        return str(exc)
    line = f"line {exc.line}: " if exc.line is not None else ""
    field = f"{exc.field}: " if exc.field else ""
    return f"{line}{field}{exc.reason}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@contextmanager
def api_access(api_client: Any) -> Iterator[None]:
    """Calls inside fail with a KubeAccessError when the API server cannot be reached or
    refuses a verb: for commands, where that ends the command (exit status 2)."""
    host = getattr(getattr(api_client, "configuration", None), "host", "?")
    try:
        yield
    except Unavailable as exc:
        raise KubeAccessError(f"Kubernetes API server {host}: {_one_line(exc)}") from exc
    except Forbidden as exc:
        raise KubeAccessError(
            f"Kubernetes API server {host} refuses: {_one_line(exc)} (grant it in the RBAC role)"
        ) from exc
