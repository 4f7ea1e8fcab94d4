"""Remediation settings: the ``remediation:`` section of the controller's config.

Safe by default: disabled, and dry-run even when enabled, so that a policy in
``enforce`` mode still changes nothing until an admin also turns ``dry_run`` off.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from guardian_common.config_types import Bool, ConfigPath, Duration, Int, StrictModel
from guardian_common.durations import format_duration

# client-go's leaderelection.JitterFactor: a retry waits up to 1.2 retry periods.
JITTER_FACTOR = 1.2
MAX_LEASE_SECONDS = 86_400
"""1d: far beyond any useful takeover time, and far inside the Lease's
``leaseDurationSeconds``, an int32 the API server refuses beyond 2147483647."""
MIN_RETRY_PERIOD = 1.0
"""1s: each retry is a Lease write; client-go's default is 2s."""


class LeaderElectionSettings(StrictModel):
    """A Kubernetes Lease, so that only one of several replicas acts. The timings are
    client-go's defaults, which every controller on the cluster already lives with."""

    enabled: Bool = True
    """On: two replicas must never both reclaim."""
    lease_name: str = "gpu-guardian"
    """Name of the Lease object."""
    lease_namespace: str | None = None
    """Namespace of the Lease; unset: ``controller_namespace``."""
    identity: str | None = None
    """This replica's holder identity; unset: hostname and pid, unique per process."""
    lease_duration: Duration = 15.0
    """Seconds another replica waits after the last renewal before taking over (15s);
    whole seconds, at most 1d."""
    renew_deadline: Duration = 10.0
    """Seconds the leader keeps trying to renew before it stops acting (10s); shorter
    than ``lease_duration``."""
    retry_period: Duration = 2.0
    """Seconds between attempts to acquire or renew (2s); at least 1s."""

    @field_validator("lease_duration")
    @classmethod
    def _fits_the_lease(cls, seconds: float) -> float:
        if seconds > MAX_LEASE_SECONDS:
            raise ValueError(
                f"must be at most {format_duration(MAX_LEASE_SECONDS)} (the Lease holds "
                f"seconds as an int32), got {format_duration(seconds)}"
            )
        return seconds

    @field_validator("retry_period")
    @classmethod
    def _not_too_often(cls, seconds: float) -> float:
        if seconds < MIN_RETRY_PERIOD:
            raise ValueError(
                f"must be at least {format_duration(MIN_RETRY_PERIOD)} (every retry writes "
                f"the Lease), got {format_duration(seconds)}"
            )
        return seconds

    @model_validator(mode="after")
    def _timing(self) -> LeaderElectionSettings:
        """What client-go's NewLeaderElector requires: the leader stops acting (after
        ``renew_deadline``) before another replica may take over (after
        ``lease_duration``), and a jittered retry fits in the deadline. Otherwise two
        replicas act at once."""
        lease, renew, retry = (
            round(s * 1e9) for s in (self.lease_duration, self.renew_deadline, self.retry_period)
        )
        show = format_duration
        if lease % 1_000_000_000:
            raise ValueError(
                f"lease_duration must be whole seconds (the Lease stores seconds), "
                f"got {show(self.lease_duration)}"
            )
        if lease <= renew:
            raise ValueError(
                f"lease_duration ({show(self.lease_duration)}) must be longer than "
                f"renew_deadline ({show(self.renew_deadline)}), or a second replica can take "
                "over while the first still acts"
            )
        if renew <= int(JITTER_FACTOR * retry):
            raise ValueError(
                f"renew_deadline ({show(self.renew_deadline)}) must be longer than "
                f"{JITTER_FACTOR} x retry_period ({show(self.retry_period)})"
            )
        return self


class SharedStateSettings(StrictModel):
    """Where the leader keeps the episodes every replica shares (docs/deploy.md, "High
    availability and state"): ConfigMaps in ``controller_namespace``."""

    config_map_prefix: str = Field(default="gpu-guardian-state", pattern=r"^[a-z0-9][-a-z0-9]*$")
    """The shards are ``<prefix>-00`` .. ``<prefix>-<shards-1>``; the Role names them."""
    shards: Int = Field(default=16, ge=1, le=100)
    """How many ConfigMaps. 16 hold about 10,000 live episodes (under 1 MiB each); more
    shards need the same names added to the Role."""
    retention: Duration = 7200.0
    """Seconds an ended episode stays (the per-namespace hourly reclaim limit reads it)."""


class RemediationSettings(StrictModel):
    enabled: Bool = False
    """Run the remediation ladder at all. Off: alerting works without cluster write access."""
    dry_run: Bool = True
    """Global: True changes nothing, whatever the policies say. On until an admin turns
    it off, so a policy in enforce mode is reviewed in the logs first."""
    kill_switch: Bool = False
    """Stops every action (so does the kill-switch annotation on the controller namespace)."""
    policy_files: list[ConfigPath] = Field(default_factory=list)
    """ReclaimPolicy file globs, relative to the config file."""
    policy_objects: Bool = True
    """Also watch ClusterReclaimPolicy and ReclaimPolicy objects (the CRDs in manifests/)
    and write their status. Off: files only, for clusters without the CRDs."""
    cluster: str | None = None
    """This controller's cluster: the ``cluster`` label value of the alerts it acts on.
    Unset: ``external_labels.cluster`` if set. A controller that knows neither acts only
    while its query endpoint serves at most one cluster."""
    controller_namespace: str = "gpu-guardian"
    """Namespace the controller runs in (Lease, kill switch); the manifests' namespace."""
    kubeconfig: ConfigPath | None = None
    """kubeconfig file; unset: the in-cluster service account, else ``$KUBECONFIG``, else
    ``~/.kube/config``."""
    kube_context: str | None = None
    """kubeconfig context to use; unset: the kubeconfig's current context."""
    api_timeout: Duration = 10.0
    """Seconds one Kubernetes API call may take. 10s: a healthy API server answers in
    well under a second; longer means it is overloaded, and the cycle moves on."""
    cycle_interval: Duration = 60.0
    """At most one ladder cycle per this many seconds of evaluation time (1m, as the
    default evaluation interval)."""
    max_actions_per_cycle: Int = Field(default=10, ge=0)
    """Reclaims per cycle over all policies: a blast-radius cap if a rule misfires."""
    max_health_age: Duration = 300.0
    """Seconds after which a rule group's last evaluation is too old to act on. 5m: five
    missed evaluations at the default interval mean the data cannot be trusted."""
    leader_election: LeaderElectionSettings = LeaderElectionSettings()
    """Only the Lease holder acts."""
    shared_state: SharedStateSettings = SharedStateSettings()
    """Episodes and their steps, kept in the cluster so that any replica can go on."""
