"""The exporter's one typed settings object, built from flags and GUARDIAN_EXPORTER_* variables.

Flags win over environment variables, which win over defaults. Only the wiring reads the
environment; everything below receives this object. A variable in a form Kubernetes
injects for Services is not a setting: a Service named ``guardian-exporter`` sets
``GUARDIAN_EXPORTER_PORT=tcp://10.0.0.11:9400``, which is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, Strict, ValidationError, field_validator, model_validator

from exporter.adapters.podresources import DEFAULT_SOCKET
from exporter.model.errors import ConfigError
from guardian_common.config_types import Duration, StrictModel
from guardian_common.grouping import DEFAULT_GROUP, GroupingError, GroupingOptions
from guardian_common.service_links import is_service_link

ENV_PREFIX = "GUARDIAN_EXPORTER_"

# setting name -> (flag, environment variable)
SOURCES: dict[str, tuple[str, str]] = {
    name: (f"--{name.replace('_', '-')}", ENV_PREFIX + name.upper())
    for name in (
        "backend",
        "listen_address",
        "port",
        "interval",
        "collect_timeout",
        "proc_root",
        "node_name",
        "vgpu_config",
        "vgpu_ratio",
        "tls_cert_file",
        "tls_key_file",
        "basic_auth_users_file",
        "max_requests",
        "auth_failures_per_minute",
        "listen_backlog",
        "nvml_backoff_max",
        "kubernetes",
        "kubeconfig",
        "pod_resources_socket",
        "group_label",
        "group_label_allowlist",
        "cluster_name",
        "default_group",
        "extra_gpu_resources",
        "kube_timeout",
        "activity_floor",
        "memory_peak_window",
        "activity_peak_window",
        "mig_memory_floor_mib",
    )
}
# The Kubernetes downward API convention, as dcgm-exporter uses it.
SOURCES["node_name"] = ("--node-name", "NODE_NAME")

# Numbers from GUARDIAN_EXPORTER_* variables arrive as text ("9400"), so these fields
# convert it; a flag arrives typed. (Settings read from files are strict.)
FROM_TEXT = Strict(False)

# GroupingOptions names the seed's options; map them back to our settings.
_GROUPING_FIELDS = {
    "groupLabel": "group_label",
    "groupLabelAllowlistRegex": "group_label_allowlist",
    "defaultGroup": "default_group",
}


class ExporterSettings(StrictModel):
    """Paths here come from flags, so they are relative to the working directory."""

    backend: Literal["nvml"] = "nvml"
    """Where readings come from: the NVIDIA driver, the one backend the product ships
    (the flag stays so that manifests which name it keep working)."""
    listen_address: str = "0.0.0.0"  # noqa: S104 - a node agent serves the Prometheus on the pod network
    """Address to listen on. All: Prometheus scrapes the pod from the pod network."""
    port: Annotated[int, FROM_TEXT, Field(ge=0, le=65535)] = 9400
    """Port of /metrics (0: any free one). 9400: dcgm-exporter's, so dashboards carry over."""
    interval: Duration = 5.0
    """Seconds between collections. 5s: well under the usual 15-30s scrape interval, so
    every scrape sees a fresh snapshot, at negligible NVML cost."""
    collect_timeout: Duration | None = None
    """Seconds one collection may take before /metrics serves the last snapshot marked
    stale; unset: the interval, since a slower collection has missed its turn anyway."""
    proc_root: Path | None = None
    """The host's /proc (unset: /proc)."""
    node_name: str = Field(min_length=1)
    """Kubernetes node name, the ``node`` label; $NODE_NAME (downward API), else hostname."""
    vgpu_config: Path | None = None
    """vGPU ratio file: default, per-model and per-UUID ratios."""
    vgpu_ratio: Annotated[float, FROM_TEXT, Field(gt=0)] = 1.0
    """Shares per GPU when there is no ratio file. 1: a GPU is one GPU."""
    tls_cert_file: Path | None = None
    """Serve HTTPS with this certificate (needs ``tls_key_file``); unset: plain HTTP."""
    tls_key_file: Path | None = None
    """The certificate's private key."""
    basic_auth_users_file: Path | None = None
    """YAML ``basic_auth_users: {user: bcrypt hash}``; unset: no authentication."""
    max_requests: Annotated[int, FROM_TEXT, Field(ge=1)] = 10
    """Concurrent /metrics requests before answering 503. 10: a few Prometheus replicas
    and a person with curl, while a flood cannot exhaust the node agent's memory."""
    auth_failures_per_minute: Annotated[int, FROM_TEXT, Field(ge=1)] = 10
    """Failed logins one client (address, or IPv6 /64) may make per minute, in a burst;
    beyond it 429 with Retry-After and no bcrypt runs. 10: a typo or a rotated password
    is noticed at once, while guessing gets 10 tries a minute."""
    listen_backlog: Annotated[int, FROM_TEXT, Field(ge=1, le=65535)] = 1024
    """Connections the kernel queues before the server accepts them (capped by
    net.core.somaxconn). 1024: hundreds of scrapers connecting at once are queued, not
    dropped and retried seconds later."""
    nvml_backoff_max: Duration = 60.0
    """Longest wait in seconds between NVML re-initialisations after a failure. 1m: a
    restarted driver is found within a minute without retrying in a tight loop."""
    kubernetes: Literal["auto", "on", "off"] = "auto"
    """Pod names and labels from the API. "auto": on in a pod (KUBERNETES_SERVICE_HOST)
    or with a kubeconfig."""
    kubeconfig: Path | None = None
    """kubeconfig file; unset: the pod's service account."""
    pod_resources_socket: Path = DEFAULT_SOCKET
    """The kubelet's pod-resources socket, which says which pod holds which GPU."""
    group_label: str = "gpu-guardian.io/group"
    """Pod label whose value becomes ``gpu_group`` (the label the shipped rules group by)."""
    group_label_allowlist: str = ""
    """Regex of raw pod label keys to export too; empty: only the group label."""
    cluster_name: str = ""
    """Adds a ``cluster`` label to every series; empty: none (Prometheus may add it)."""
    default_group: str = DEFAULT_GROUP
    """``gpu_group`` of pods without the group label."""
    extra_gpu_resources: tuple[str, ...] = ()
    """Resource names counted as GPUs besides nvidia.com/gpu, e.g. nvidia.com/gpu.shared."""
    kube_timeout: Duration = 10.0
    """Seconds any Kubernetes or kubelet call may take. 10s: both answer in milliseconds
    when healthy; a collection must not hang on them."""
    activity_floor: Annotated[float, FROM_TEXT, Field(ge=0, le=1, allow_inf_nan=False)] = 0.05
    """Utilization ratio above which a GPU counts as active for
    ``guardian_gpu_last_active_timestamp_seconds``. 0.05: the shipped rules' noise floor."""
    memory_peak_window: Duration = 3600.0
    """Seconds of the window of ``guardian_gpu_memory_used_peak_bytes``. 1h: the shipped
    idle rule's."""
    activity_peak_window: Duration = 1800.0
    """Seconds of the window of ``guardian_gpu_utilization_peak_ratio``. 30m: the shipped
    idle rule's. Also how long ``guardian_pod_device_*`` facts outlive a pod's last process."""
    mig_memory_floor_mib: Annotated[int, FROM_TEXT, Field(ge=0)] = 64
    """MiB of memory at which a MIG device counts as having a process (for
    ``guardian_gpu_last_process_timestamp_seconds``): without MIG monitoring rights NVML can
    list no process on a slice that holds memory. 64: the shipped rules' floor."""

    @field_validator("extra_gpu_resources", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExporterSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file: TLS needs both --tls-cert-file and --tls-key-file")
        try:
            self.grouping()
        except GroupingError as exc:
            field, _, reason = str(exc).partition(": ")
            name = _GROUPING_FIELDS.get(field, "group_label")
            raise ValueError(f"{name}: {reason or exc}") from exc
        return self

    def grouping(self) -> GroupingOptions:
        return GroupingOptions(
            group_label=self.group_label,
            allowlist_regex=self.group_label_allowlist,
            cluster_name=self.cluster_name,
            default_group=self.default_group,
        )

    def kubernetes_enabled(self, env: Mapping[str, str]) -> bool:
        if self.kubernetes == "auto":
            return self.kubeconfig is not None or bool(env.get("KUBERNETES_SERVICE_HOST"))
        return self.kubernetes == "on"

    @property
    def timeout(self) -> float:
        return self.collect_timeout if self.collect_timeout is not None else self.interval


def settings_from(
    flags: Mapping[str, Any], env: Mapping[str, str], hostname: str
) -> ExporterSettings:
    """Merge flags (None: not given), environment and defaults; errors name flag or variable."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, (flag, var) in SOURCES.items():
        if flags.get(name) is not None:
            values[name], origin[name] = flags[name], flag
        elif env.get(var) and not is_service_link(var, env[var]):
            values[name], origin[name] = env[var], f"{var} (environment)"
    values.setdefault("node_name", hostname)
    try:
        return ExporterSettings.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = str(err["loc"][0]) if err["loc"] else ""
        msg = str(err["msg"]).removeprefix("Value error, ")
        if not name and ":" in msg:
            name, msg = (part.strip() for part in msg.split(":", 1))
        flag, var = SOURCES.get(name, (name, ""))
        where = origin.get(name, f"{flag} / {var}" if var else flag)
        got = repr(err.get("input"))
        if err["loc"] and got not in msg:
            msg = f"{msg} (got {got})"
        raise ConfigError(msg, field=where) from exc
