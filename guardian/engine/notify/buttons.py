"""Which buttons an episode's parent offers, and the commands for people without them.

Pure: a finding in, button actions and copy-paste commands out. The buttons follow the
episode: Keep and Exempt while it is wasting, Restore once reclaimed, Reclaim now only
during an enforced grace period (and only when turned on); none once it is over, and
none at all while the kill switch is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from guardian.model.notifications import Finding, Phase
from guardian.model.policies import Annotations
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian.model.times import rfc3339


class ButtonAction(StrEnum):
    """A button's ``action_id``."""

    KEEP_4H = "keep_4h"
    KEEP_24H = "keep_24h"
    EXEMPT = "exempt"
    RESTORE = "restore"
    RECLAIM_NOW = "reclaim_now"


LABELS = {
    ButtonAction.KEEP_4H: "Keep 4h",
    ButtonAction.KEEP_24H: "Keep 24h",
    ButtonAction.EXEMPT: "Exempt",
    ButtonAction.RESTORE: "Restore",
    ButtonAction.RECLAIM_NOW: "Reclaim now",
}
_COUNTDOWN = (LadderStep.ANNOTATE, LadderStep.GRACE, LadderStep.RECLAIM)
KEEP_FOR = {ButtonAction.KEEP_4H: 4 * 3600.0, ButtonAction.KEEP_24H: 24 * 3600.0}


@dataclass(frozen=True)
class ButtonRules:
    """``enabled``: an interactivity transport is configured; ``kill_switch``: the
    controller's (from its settings); ``reclaim_now``: offer that button at all."""

    enabled: bool = False
    kill_switch: bool = False
    reclaim_now: bool = False


NO_BUTTONS = ButtonRules()


def offered(f: Finding, rules: ButtonRules) -> tuple[ButtonAction, ...]:
    """The buttons the parent shows now, in order."""
    if not rules.enabled or rules.kill_switch or f.workload is None:
        return ()
    if f.phase is Phase.RECLAIMED:
        return (ButtonAction.RESTORE,)
    if not f.open or f.exempted_by is not None:
        return ()
    out = [ButtonAction.KEEP_4H, ButtonAction.KEEP_24H, ButtonAction.EXEMPT]
    # The grace period runs from the notification until the reclaim: the ladder has a
    # step of it pending (annotate, then reclaim) with a due time.
    grace = f.next_step in _COUNTDOWN and f.next_step_due is not None
    enforced = f.last_outcome is not StepOutcome.DRY_RUN
    if rules.reclaim_now and grace and enforced and f.kept_until is None:
        out.append(ButtonAction.RECLAIM_NOW)
    return tuple(out)


def kubectl_target(ref: WorkloadRef) -> str:
    """``-n NS kind.group/name`` as kubectl takes it (the group avoids ambiguous kinds)."""
    group = ref.api_version.rpartition("/")[0]
    resource = ref.kind.lower() + (f".{group}" if group else "")
    return f"-n {ref.namespace} {resource}/{ref.name}"


def snooze_command(ref: WorkloadRef, until: float) -> str:
    return (
        f"kubectl annotate --overwrite {kubectl_target(ref)} "
        f"{Annotations.SNOOZE_UNTIL}={rfc3339(until)}"
    )


def exempt_command(ref: WorkloadRef) -> str:
    return f"kubectl annotate --overwrite {kubectl_target(ref)} {Annotations.EXCLUDE}=true"


def restore_command(ref: WorkloadRef) -> str:
    return f"guardian restore {ref.namespace}/{ref.kind}/{ref.name}"


def commands(f: Finding, now: float) -> tuple[str, ...]:
    """What to type instead of pressing a button: exact commands for this workload."""
    ref = f.workload
    if ref is None:
        return ()
    if f.phase is Phase.RECLAIMED:
        return (f.restore_command or restore_command(ref),)
    if not f.open:
        return ()
    return (
        snooze_command(ref, now + KEEP_FOR[ButtonAction.KEEP_4H]),
        exempt_command(ref),
    )
