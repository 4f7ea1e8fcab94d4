"""What a pipeline alert is about, in words: the affected thing, the problem, the recovery.

Pipeline alerts (``guardian_class: pipeline``) watch the metrics pipeline: the GPU
exporters and their data, Prometheus remote write, Thanos, GPU Guardian's own rule engine.
No workload is behind them, so their messages name what is affected from the labels the
shipped packs put on them (rules/README.md, "Pipeline health"): ``node``; ``instance`` and
``job`` (a scrape target); ``group`` and ``rule`` (a group of the rule engine);
``remote_name`` and ``url`` (a remote-write queue); ``namespace`` and ``pod`` (where a
target's ``up`` carries them); and ``reason``. A shipped alert has its own words; any
other pipeline alert is named by its alert name and the first of those labels present.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from guardian.model.policies import CLASS_LABEL, PIPELINE
from guardian_common.durations import format_duration

Labels = Mapping[str, str]


def is_pipeline(labels: Labels) -> bool:
    """Alerts labelled ``guardian_class: pipeline`` watch the metrics pipeline."""
    return labels.get(CLASS_LABEL) == PIPELINE


@dataclass(frozen=True, slots=True)
class PipelineText:
    """A pipeline alert in words. ``title``: what is wrong where (with the reason);
    ``recovered``: what came back; ``affected``: one line per affected thing;
    ``where``: the shortest name of the affected thing (empty: the whole pipeline)."""

    title: str
    recovered: str
    affected: tuple[str, ...]
    where: str

    def recovered_after(self, seconds: float) -> str:
        """The recovery with how long the problem lasted."""
        return f"{self.recovered} after {format_duration(max(0.0, round(seconds)))}"


def _target(labels: Labels) -> str:
    """A scrape target: ``10.0.0.5:9400 (job x)``, else ``job x``; empty without either."""
    instance, job = labels.get("instance", ""), labels.get("job", "")
    if instance:
        return f"{instance} (job {job})" if job else instance
    return f"job {job}" if job else ""


def _node_or_target(noun: str, preposition: str) -> Callable[[Labels], str]:
    """``Exporter on node gn2``, else ``Exporter 10.0.0.5:9400 (job x)``, else the noun."""

    def subject(labels: Labels) -> str:
        if labels.get("node"):
            return f"{noun} {preposition} node {labels['node']}"
        target = _target(labels)
        return f"{noun} {target}" if target else noun

    return subject


def _component(noun: str) -> Callable[[Labels], str]:
    """``Thanos Receive 10.0.0.7:19291 (job x)``, ``Thanos Receive (job x)`` or the noun."""

    def subject(labels: Labels) -> str:
        target = _target(labels)
        if not target:
            return noun
        return f"{noun} ({target})" if not labels.get("instance") else f"{noun} {target}"

    return subject


def _queue(labels: Labels) -> str:
    queue = labels.get("remote_name") or labels.get("url") or ""
    of = f" of {labels['instance']}" if labels.get("instance") else ""
    return f"Remote-write queue {queue}{of}" if queue else f"Remote write{of}"


def _rule_group(labels: Labels) -> str:
    group, rule = labels.get("group", ""), labels.get("rule", "")
    if group and rule:
        return f"Rule {rule} of group {group}"
    if group or rule:
        return f"Rule group {group}" if group else f"Rule {rule}"
    return "GPU Guardian's rule engine"


@dataclass(frozen=True, slots=True)
class _Words:
    subject: Callable[[Labels], str]
    firing: str  # after the subject: "is down"
    recovered: str  # after the subject: "is back"
    target: str = "target"  # what an ``instance`` is, in the affected lines


_EXPORTER = _node_or_target("Exporter", "on")
_SERIES = _node_or_target("GPU series", "on")
_WORDS: dict[str, _Words] = {
    "GpuExporterDown": _Words(_EXPORTER, "is down", "is back", "exporter"),
    "GpuExporterStale": _Words(
        _node_or_target("Exporter data", "on"), "stopped updating", "updates again", "exporter"
    ),
    "GpuMetricsGap": _Words(
        _node_or_target("GPU metrics", "from"), "have gaps", "are complete again", "exporter"
    ),
    "GpuMissingGroupLabel": _Words(
        _SERIES, "lack the gpu_group label", "have gpu_group again", "exporter"
    ),
    "GpuMissingPodLabels": _Words(
        _SERIES, "cannot be tied to pods or GPUs", "are tied to pods and GPUs again", "exporter"
    ),
    "PrometheusRemoteWriteBehind": _Words(_queue, "is behind", "caught up", "Prometheus"),
    "ThanosQueryPartialResponse": _Words(
        _component("Thanos Query"),
        "answers with partial data",
        "answers in full again",
        "Thanos Query",
    ),
    "ThanosReceiveRequestErrors": _Words(
        _component("Thanos Receive"),
        "fails remote-write requests",
        "accepts remote writes again",
        "Thanos Receive",
    ),
    "ThanosReceiveDown": _Words(
        _component("Thanos Receive"), "is down", "is back", "Thanos Receive"
    ),
    "GuardianEvaluationFailing": _Words(_rule_group, "is failing", "evaluates again"),
}


def _where(labels: Labels) -> str:
    """The affected thing's shortest name, for a pipeline alert of any name."""
    if labels.get("node"):
        return f"node {labels['node']}"
    if labels.get("group"):
        return f"rule group {labels['group']}"
    if labels.get("remote_name"):
        return f"remote-write queue {labels['remote_name']}"
    return _target(labels)


def _generic(alertname: str) -> _Words:
    def subject(labels: Labels) -> str:
        where = _where(labels)
        return f"{alertname} on {where}" if where else alertname

    return _Words(subject, "is firing", "is over")


def _affected(labels: Labels, target_noun: str) -> tuple[str, ...]:
    lines = []
    if labels.get("node"):
        lines.append(f"node {labels['node']}")
    if labels.get("group"):
        lines.append(f"rule group {labels['group']}")
    if labels.get("rule"):
        lines.append(f"rule {labels['rule']}")
    if labels.get("remote_name") or labels.get("url"):
        to = f" to {labels['url']}" if labels.get("url") else ""
        lines.append(f"remote-write queue {labels.get('remote_name', '')}".rstrip() + to)
    if labels.get("instance"):
        lines.append(f"{target_noun} {_target(labels)}")
    elif labels.get("job"):
        lines.append(f"job {labels['job']}")
    if labels.get("pod"):
        namespace = labels.get("namespace")
        lines.append(f"pod {namespace}/{labels['pod']}" if namespace else f"pod {labels['pod']}")
    return tuple(lines)


def reason_text(labels: Labels) -> str:
    """The ``reason`` label as words (``scrape_failing``: ``scrape failing``)."""
    reason = labels.get("reason", "").strip()
    return {"nvml_down": "NVML down", "no_gpu_metrics": "no GPU metrics"}.get(
        reason, reason.replace("_", " ")
    )


def describe(labels: Labels, alertname: str) -> PipelineText:
    """A pipeline alert in words, from its labels."""
    words = _WORDS.get(alertname) or _generic(alertname)
    subject = words.subject(labels)
    reason = reason_text(labels)
    title = f"{subject} {words.firing}" + (f" (reason: {reason})" if reason else "")
    return PipelineText(
        title=title,
        recovered=f"{subject} {words.recovered}",
        affected=_affected(labels, words.target),
        where=_where(labels),
    )
