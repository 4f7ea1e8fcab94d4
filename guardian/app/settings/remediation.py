"""Remediation settings: the ``remediation:`` section of the controller's config.

Safe by default: disabled, and dry-run even when enabled, so that a policy in
``enforce`` mode still changes nothing until an admin also turns ``dry_run`` off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from guardian_common.durations import parse_duration


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else value


Seconds = Annotated[float, BeforeValidator(_duration), Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LeaderElectionSettings(_Strict):
    enabled: bool = True
    lease_name: str = "gpu-guardian"
    lease_namespace: str | None = None  # default: the controller namespace
    identity: str | None = None  # default: hostname and pid
    lease_duration: Seconds = 15.0  # client-go's defaults
    renew_deadline: Seconds = 10.0
    retry_period: Seconds = 2.0


class RemediationSettings(_Strict):
    enabled: bool = False
    dry_run: bool = True  # global: True changes nothing, whatever the policies say
    kill_switch: bool = False  # stops every action (also: the kill-switch annotation)
    policy_files: list[str] = []
    controller_namespace: str = "gpu-guardian"
    kubeconfig: str | None = None  # None: in-cluster service account
    api_timeout: Seconds = 10.0
    cycle_interval: Seconds = 60.0  # at most one ladder cycle per this much evaluation time
    max_actions_per_cycle: int = Field(default=10, ge=0)
    max_health_age: Seconds = 300.0
    leader_election: LeaderElectionSettings = LeaderElectionSettings()

    def resolved(self, base: Path) -> RemediationSettings:
        """Relative paths taken from the config file's directory."""

        def fix(path: str) -> str:
            return path if Path(path).is_absolute() else str(base / path)

        return self.model_copy(
            update={
                "policy_files": [fix(p) for p in self.policy_files],
                "kubeconfig": fix(self.kubeconfig) if self.kubeconfig else None,
            }
        )
