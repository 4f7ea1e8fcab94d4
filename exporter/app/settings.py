"""The exporter's one typed settings object, built from flags and GUARDIAN_EXPORTER_* variables.

Flags win over environment variables, which win over defaults. Only the wiring reads the
environment; everything below receives this object.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from exporter.adapters.podresources import DEFAULT_SOCKET
from exporter.model.errors import ConfigError
from guardian_common.grouping import DEFAULT_GROUP, GroupingError, GroupingOptions

ENV_PREFIX = "GUARDIAN_EXPORTER_"

# setting name -> (flag, environment variable)
SOURCES: dict[str, tuple[str, str]] = {
    name: (f"--{name.replace('_', '-')}", ENV_PREFIX + name.upper())
    for name in (
        "backend",
        "scenario",
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
    )
}
# The Kubernetes downward API convention, as dcgm-exporter uses it.
SOURCES["node_name"] = ("--node-name", "NODE_NAME")

Positive = Annotated[float, Field(gt=0)]
# GroupingOptions names the seed's options; map them back to our settings.
_GROUPING_FIELDS = {
    "groupLabel": "group_label",
    "groupLabelAllowlistRegex": "group_label_allowlist",
    "defaultGroup": "default_group",
}


class ExporterSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["nvml", "simulated"] = "nvml"
    scenario: Path | None = None
    listen_address: str = "0.0.0.0"  # noqa: S104 - a node agent serves the Prometheus on the pod network
    port: Annotated[int, Field(ge=0, le=65535)] = 9400
    interval: Positive = 5.0
    # How long one collection may take before /metrics serves the last snapshot marked stale.
    collect_timeout: Positive | None = None
    # None: /proc for the nvml backend; the scenario's own cgroups for the simulated one.
    proc_root: Path | None = None
    node_name: str = Field(min_length=1)
    vgpu_config: Path | None = None
    vgpu_ratio: Positive = 1.0
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    basic_auth_users_file: Path | None = None
    max_requests: Annotated[int, Field(ge=1)] = 10
    nvml_backoff_max: Positive = 60.0
    # Kubernetes enrichment. "auto": on in a pod (KUBERNETES_SERVICE_HOST) or with a kubeconfig.
    kubernetes: Literal["auto", "on", "off"] = "auto"
    kubeconfig: Path | None = None  # None: the pod's service account
    pod_resources_socket: Path = DEFAULT_SOCKET
    group_label: str = "gpu-guardian.io/group"
    group_label_allowlist: str = ""  # empty: only the group label, ^(<escaped key>)$
    cluster_name: str = ""
    default_group: str = DEFAULT_GROUP
    extra_gpu_resources: tuple[str, ...] = ()  # e.g. nvidia.com/gpu.shared
    kube_timeout: Positive = 10.0  # every Kubernetes and kubelet call

    @field_validator("extra_gpu_resources", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExporterSettings:
        if self.backend == "simulated" and self.scenario is None:
            raise ValueError("scenario: the simulated backend needs --scenario FILE")
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
        elif env.get(var):
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
        if err["loc"]:
            msg = f"{msg} (got {err.get('input')!r})"
        raise ConfigError(msg, field=where) from exc
