"""Fold an episode's alert transitions and remediation events into a ``Finding``.

Pure: every function takes ``now`` or the event's own time. Where the numbers come
from (documented in docs/slack.md):

- labels: ``cluster`` (configurable name), ``namespace``, ``pod``, ``node``, ``gpu_group``,
  ``severity``, and the GPU model from the first of ``gpu_model``, ``model``, ``modelName``;
- the alert value: its meaning per alert name (``GpuIdle``: the larger of its activity
  peaks, utilization or busy time, as a ratio; ``GpuMemoryUnderutilized``: the peak
  used/total memory ratio), configurable;
- annotations: ``summary``, ``description``, ``runbook_url``, ``advice`` (right-sizing
  text, shown as it is), and optional evidence ``peak_utilization`` (ratio),
  ``memory_used_bytes``, ``memory_total_bytes``, ``idle_since`` (unix seconds),
  ``idle_window`` (a duration such as ``30m``) and ``share`` (the part of the GPU the pod
  holds, in (0, 1]: a time-slice or vGPU share; the cost is the share's);
- the idle start: ``idle_since``, else ``active_at`` minus the idle window (annotation,
  else the configured window per alert name), else ``active_at``.

A pipeline alert (``guardian_class: pipeline``) has no workload and no cost, and its
resolution says what recovered and after how long (``pipeline.py`` has the words).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from guardian.engine.notify.pipeline import describe, is_pipeline
from guardian.model.alerts import AlertTransition, TransitionKind
from guardian.model.labels import LabelSet
from guardian.model.notifications import (
    Cost,
    Finding,
    HistoryEntry,
    OwnerContext,
    Phase,
    UsageEvidence,
)
from guardian.model.remediation_events import (
    HoldKind,
    LadderStep,
    RemediationEvent,
    StepOutcome,
    episode_id,
)
from guardian.model.runbooks import RUNBOOK_BASE
from guardian_common.durations import format_duration, parse_duration
from guardian_common.words import plural

PEAK_UTILIZATION = "peak_utilization"
PEAK_MEMORY_RATIO = "peak_memory_ratio"
_MODEL_LABELS = ("gpu_model", "model", "modelName")


@dataclass(frozen=True)
class PriceTable:
    """Price per GPU-hour by GPU model: an exact name first, then the longest key that
    occurs in the model name (case-insensitive, so ``A100`` prices ``NVIDIA A100-SXM4-80GB``),
    then ``default`` (``None``: cost unknown, not shown)."""

    per_model: Mapping[str, float] = field(default_factory=dict)
    default: float | None = None
    currency: str = "$"

    def price(self, model: str | None) -> float | None:
        if model:
            if model in self.per_model:
                return self.per_model[model]
            lowered = model.lower()
            matches = [k for k in self.per_model if k.lower() in lowered]
            if matches:
                return self.per_model[max(matches, key=len)]
        return self.default


@dataclass(frozen=True)
class FindingRules:
    prices: PriceTable = field(default_factory=PriceTable)
    value_meaning: Mapping[str, str] = field(
        default_factory=lambda: {
            "GpuIdle": PEAK_UTILIZATION,
            "GpuMemoryUnderutilized": PEAK_MEMORY_RATIO,
        }
    )
    idle_windows: Mapping[str, float] = field(
        default_factory=lambda: {"GpuIdle": 1800.0, "GpuMemoryUnderutilized": 3600.0}
    )
    cluster_label: str = "cluster"
    runbook_url_pattern: str | None = None  # where the shipped runbooks are read


# The shipped rules' runbook addresses; a message links to the page they name through
# ``runbook_url_pattern`` (docs/runbooks/README.md).
SHIPPED_RUNBOOKS = RUNBOOK_BASE


def runbook_link(annotation: str | None, alertname: str, pattern: str | None) -> str | None:
    """The runbook a message links to: a shipped runbook through ``pattern``
    (``{alertname}``, ``{alertname_lower}``: the page's name), anything else as it is."""
    if not annotation:
        return None
    if pattern is None or not annotation.startswith(SHIPPED_RUNBOOKS):
        return annotation
    page = annotation.removeprefix(SHIPPED_RUNBOOKS).strip("/") or alertname.lower()
    return pattern.replace("{alertname_lower}", page).replace("{alertname}", alertname)


def _number(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _share(text: str | None) -> float | None:
    """A share of a GPU: in (0, 1]; anything else (0, above 1, not a number) is ignored."""
    value = _number(text)
    return value if value is not None and 0.0 < value <= 1.0 else None


def _evidence(
    alertname: str, value: float, annotations: LabelSet, active_at: float, rules: FindingRules
) -> UsageEvidence:
    meaning = rules.value_meaning.get(alertname)
    peak_util = _number(annotations.get("peak_utilization"))
    peak_mem = None
    if meaning == PEAK_UTILIZATION and peak_util is None:
        peak_util = _finite(value)
    elif meaning == PEAK_MEMORY_RATIO:
        peak_mem = _finite(value)
    used = _number(annotations.get("memory_used_bytes"))
    total = _number(annotations.get("memory_total_bytes"))
    if peak_mem is None and used is not None and total:
        peak_mem = used / total
    idle_since = _number(annotations.get("idle_since"))
    if idle_since is None:
        window = rules.idle_windows.get(alertname)
        raw = annotations.get("idle_window")
        if raw:
            with contextlib.suppress(ValueError):  # a bad one falls back to the configured window
                window = parse_duration(raw.strip())
        # Only waste alerts have an idle window; a pipeline alert is not "idle for" anything.
        idle_since = active_at - window if window is not None else None
    share = _share(annotations.get("share"))
    return UsageEvidence(peak_util, peak_mem, used, total, idle_since, share)


def with_cost(finding: Finding, now: float, prices: PriceTable) -> Finding:
    """Recompute cost per hour and the waste so far; waste stops when the GPU is freed.
    A finding about a share of a GPU costs that share of the GPU's price. A pipeline
    alert wastes nothing: it is about the metrics, not about a GPU in use."""
    price = prices.price(finding.gpu_model)
    if price is None or is_pipeline(finding.labels):
        return finding.with_changes(cost=None)
    share = finding.evidence.share if finding.evidence.share is not None else 1.0
    per_hour = price * finding.gpus * share
    start = finding.evidence.idle_since if finding.evidence.idle_since is not None else now
    ends = [t for t in (finding.reclaimed_at, finding.resolved_at) if t is not None]
    end = min([now, *ends])
    waste = per_hour * max(0.0, end - start) / 3600.0
    return finding.with_changes(cost=Cost(per_hour, waste, prices.currency))


@dataclass(frozen=True)
class AlertFacts:
    """What an alert said when it fired. ``rule`` names it when ``alertname`` is missing;
    ``value`` is NaN when unknown (an episode first seen through a ladder event)."""

    labels: LabelSet
    annotations: LabelSet
    value: float
    active_at: float
    rule: str | None = None

    @classmethod
    def of(cls, t: AlertTransition) -> AlertFacts:
        return cls(t.labels, t.annotations, t.value, t.active_at, t.rule)


def new_finding(
    alert: AlertFacts, now: float, rules: FindingRules, context: OwnerContext | None
) -> Finding:
    labels, annotations, active_at = alert.labels, alert.annotations, alert.active_at
    alertname = labels.get("alertname", alert.rule or "alert")
    ctx = context or OwnerContext()
    model = ctx.gpu_model or next((labels[k] for k in _MODEL_LABELS if labels.get(k)), None)
    mention = ctx.mention
    finding = Finding(
        episode=episode_id(labels, active_at),
        alertname=alertname,
        severity=labels.get("severity", "none"),
        phase=Phase.FIRING,
        labels=labels,
        active_at=active_at,
        updated_at=now,
        summary=annotations.get("summary", ""),
        description=annotations.get("description", ""),
        runbook_url=runbook_link(
            annotations.get("runbook_url"), alertname, rules.runbook_url_pattern
        ),
        cluster=labels.get(rules.cluster_label) or None,
        namespace=labels.get("namespace") or None,
        pod=labels.get("pod") or None,
        node=labels.get("node") or None,
        gpu_group=labels.get("gpu_group") or None,
        gpu_model=model,
        # A pipeline alert is about the metrics pipeline: a pod in its labels is a scrape
        # target's (Thanos Receive's ``up``), never a workload to keep, exempt or reclaim.
        workload=None if is_pipeline(labels) else ctx.workload,
        evidence=_evidence(alertname, alert.value, annotations, active_at, rules),
        mentions=split_mentions(mention) if mention else (),
        advice=annotations.get("advice", "").strip() or None,
    )
    return with_cost(finding, now, rules.prices)


def split_mentions(value: str) -> tuple[str, ...]:
    """The annotation's mentions, comma- or space-separated, in order, without repeats.
    The notifier turns each into its own syntax (Slack: user, user-group or @here)."""
    out: list[str] = []
    for token in value.replace(",", " ").split():
        if token not in out:
            out.append(token)
    return tuple(out)


# ------------------------------------------------------------------ transitions
def apply_transition(
    before: Finding | None,
    t: AlertTransition,
    rules: FindingRules,
    context: OwnerContext | None,
) -> tuple[Finding, HistoryEntry] | None:
    """The finding after an alert transition, and the history line; ``None`` if the
    transition means nothing to a reader (pending, or a repeat)."""
    note = None
    if not t.evidence.health.actionable:
        note = f"evaluation {t.evidence.health.value}" + (
            f": {t.evidence.error}" if t.evidence.error else ""
        )
    if t.kind is TransitionKind.FIRING:
        if before is not None:
            return None  # the same episode firing again (e.g. replayed after a restart)
        finding = new_finding(AlertFacts.of(t), t.at, rules, context).with_changes(
            evaluation_note=note
        )
        return finding, HistoryEntry(t.at, Phase.FIRING, "Firing.", finding.mentions)
    if t.kind is TransitionKind.RESOLVED:
        if before is None or before.resolved_at is not None:
            return None  # never announced (a pending alert that vanished), or already resolved
        phase = before.phase if before.phase in (Phase.RECLAIMED, Phase.RESTORED) else None
        after = before.with_changes(
            phase=phase or Phase.RESOLVED,
            resolved_at=t.at,
            updated_at=t.at,
            next_step=None,
            next_step_due=None,
            evaluation_note=note,
        )
        text = _resolved_text(before, t.at, note)
        return with_cost(after, t.at, rules.prices), HistoryEntry(t.at, Phase.RESOLVED, text)
    return None


def _resolved_text(before: Finding, at: float, note: str | None) -> str:
    """``Alert resolved.``; for a pipeline alert, what recovered and after how long."""
    said = "Alert resolved"
    if is_pipeline(before.labels):
        said = describe(before.labels, before.alertname).recovered_after(at - before.active_at)
    return said + (f" ({note})" if note else "") + "."


# ------------------------------------------------------------------ remediation
def finding_for_event(e: RemediationEvent, rules: FindingRules) -> Finding:
    """A finding for an episode the notifier never saw fire (enabled later, or lost)."""
    fired = AlertFacts(e.alert_labels, LabelSet(), float("nan"), e.at)
    base = new_finding(fired, e.at, rules, OwnerContext(e.workload))
    return base.with_changes(episode=e.episode, ladder_episode=e.episode)


_BETWEEN = (LadderStep.HOLD, LadderStep.RESUME, LadderStep.GIVE_UP)


def apply_remediation(
    before: Finding, e: RemediationEvent, rules: FindingRules
) -> tuple[Finding, HistoryEntry] | None:
    """The finding after one ladder step, and the history line."""
    changes: dict[str, object] = {
        "workload": e.workload,
        "policy": e.policy or before.policy,
        "reason": e.reason or before.reason,
        "last_outcome": e.outcome,
        "next_step": e.next_step,
        "next_step_due": e.next_step_due,
        "updated_at": e.at,
        "ladder_episode": e.episode,
    }
    phase = before.phase
    step = e.step.value
    due = e.next_step_due if e.next_step is not None else None
    why = f": {e.reason}" if e.reason else ""
    mentions: tuple[str, ...] = ()
    if e.step in _BETWEEN or e.hold is HoldKind.EVIDENCE:  # the reason says it all
        text = f"{e.reason[:1].upper()}{e.reason[1:]}."
    elif e.outcome is StepOutcome.APPLIED or e.outcome is StepOutcome.PLANNED:
        if e.step is LadderStep.GRACE:
            phase = Phase.GRACE
            text = f"Grace period started (policy {e.policy})."
        elif e.step is LadderStep.RECLAIM and e.outcome is StepOutcome.APPLIED:
            phase = Phase.RECLAIMED
            changes["reclaimed_at"] = e.at
            changes["restore_command"] = e.restore_command
            replicas = (
                f" (was {plural(e.original_replicas, 'replica')})" if e.original_replicas else ""
            )
            text = f"Reclaimed {e.workload}{replicas}{why}."
            mentions = before.mentions
        elif e.step is LadderStep.RESTORE and e.outcome is StepOutcome.APPLIED:
            phase = Phase.RESTORED
            changes["restore_command"] = None
            text = f"Restored {e.workload}{why}."
        else:
            text = f"Step {step} {e.outcome.value}{why}."
    elif e.outcome is StepOutcome.DRY_RUN:
        text = f"Dry run: would {step} {e.workload}{why}."
    elif e.outcome is StepOutcome.REFUSED:
        text = f"Step {step} refused{why}."
    else:
        text = f"Step {step} failed{why}."
    if e.restore_command and phase is Phase.RECLAIMED:
        changes["restore_command"] = e.restore_command
    after = with_cost(before.with_changes(phase=phase, **changes), e.at, rules.prices)
    return after, HistoryEntry(e.at, phase, text, mentions, e.next_step if due else None, due)


def idle_for(finding: Finding, now: float) -> str:
    """How long the GPU has been idle: until now, or until it was freed or the alert ended."""
    since = finding.evidence.idle_since
    if since is None:
        return "unknown"
    end = min([now, *(t for t in (finding.reclaimed_at, finding.resolved_at) if t is not None)])
    return format_duration(max(0.0, round(end - since)))
