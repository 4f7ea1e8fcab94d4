"""Pipeline alerts' Slack messages say what is affected and, resolved, what recovered.

Every ``guardian_class: pipeline`` rule of the shipped packs is read from its rule file,
so a new one is covered (and needs its words, and a line in ``EXPECTED``). The labels
are those the rule's annotations name (``$labels.X``: what the alert carries) plus its
static ones and ``cluster``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.slack.blocks import (
    SlackPayload,
    fallback_text,
    preview,
    render_detail,
    render_group,
    render_parent,
    render_reply,
)
from guardian.engine.notify.buttons import ButtonRules
from guardian.engine.notify.findings import FindingRules, PriceTable, apply_transition
from guardian.engine.notify.lifecycle import plan_reminder, summarise
from guardian.engine.notify.pipeline import describe
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, HistoryEntry, OwnerContext, Phase
from guardian.model.remediation_events import WorkloadRef
from testbed.slackapi.content_limits import parse_content
from tests.unit.guardian.notify.samples import T0, firing

ROOT = Path(__file__).resolve().parents[4]
SNAPSHOTS = Path(__file__).parent / "snapshots"
PACKS = sorted([*ROOT.glob("rules/guardian/*.yaml"), *ROOT.glob("rules/dcgm/*.yaml")])
RULES = FindingRules(prices=PriceTable({"A100": 4.1}, default=2.0))
OUT_FOR = 12 * 60.0  # firing at T0 + 5m, resolved 12m after the condition began
WASTE_FIELDS = {"Workload", "Namespace", "Pod", "Cost", "Idle for", "GPU model", "GPU group"}

# Label values by name; per alert where a shared one would read wrong.
SAMPLE = {
    "cluster": "prod-eu",
    "node": "gn2",
    "instance": "10.0.0.5:9400",
    "job": "guardian-exporter",
    "group": "guardian-gpu-idle",
    "rule": "GpuIdle",
    "reason": "partial_response",  # only where the rule keeps the counter's own reason
    "remote_name": "thanos",
    "url": "http://thanos-receive:19291/api/v1/receive",
}
SAMPLE_FOR = {
    "PrometheusRemoteWriteBehind": {"instance": "prometheus-0:9090"},
    "ThanosQueryPartialResponse": {"job": "thanos-query"},
    "ThanosReceiveRequestErrors": {"job": "thanos-receive"},
    "ThanosReceiveDown": {"instance": "10.0.0.7:19291", "job": "thanos-receive"},
}

_PODS = "GPU series on node gn2 cannot be tied to pods or GPUs (reason: {})"
_PODS_BACK = "GPU series on node gn2 are tied to pods and GPUs again"
_RULE = "Rule GpuIdle of group guardian-gpu-idle"
EXPECTED: dict[tuple[str, str | None], tuple[str, str]] = {
    ("GpuExporterDown", "nvml_down"): (
        "Exporter on node gn2 is down (reason: NVML down)",
        "Exporter on node gn2 is back",
    ),
    ("GpuExporterDown", "no_gpu_metrics"): (
        "Exporter on node gn2 is down (reason: no GPU metrics)",
        "Exporter on node gn2 is back",
    ),
    ("GpuExporterDown", "scrape_failing"): (
        "Exporter on node gn2 is down (reason: scrape failing)",
        "Exporter on node gn2 is back",
    ),
    ("GpuExporterDown", "vanished"): (
        "Exporter on node gn2 is down (reason: vanished)",
        "Exporter on node gn2 is back",
    ),
    ("GpuExporterStale", None): (
        "Exporter data on node gn2 stopped updating",
        "Exporter data on node gn2 updates again",
    ),
    ("GpuMetricsGap", None): (
        "GPU metrics from node gn2 have gaps",
        "GPU metrics from node gn2 are complete again",
    ),
    ("GpuMissingGroupLabel", None): (
        "GPU series on node gn2 lack the gpu_group label",
        "GPU series on node gn2 have gpu_group again",
    ),
    ("GpuMissingPodLabels", "exported_pod"): (_PODS.format("exported pod"), _PODS_BACK),
    ("GpuMissingPodLabels", "missing"): (_PODS.format("missing"), _PODS_BACK),
    ("GpuMissingPodLabels", "no_device_identity"): (
        _PODS.format("no device identity"),
        _PODS_BACK,
    ),
    ("GpuMissingPodLabels", "no_pod_mapping"): (_PODS.format("no pod mapping"), _PODS_BACK),
    ("PrometheusRemoteWriteBehind", None): (
        "Remote-write queue thanos of prometheus-0:9090 is behind",
        "Remote-write queue thanos of prometheus-0:9090 caught up",
    ),
    ("ThanosQueryPartialResponse", None): (
        "Thanos Query (job thanos-query) answers with partial data",
        "Thanos Query (job thanos-query) answers in full again",
    ),
    ("ThanosReceiveRequestErrors", None): (
        "Thanos Receive (job thanos-receive) fails remote-write requests",
        "Thanos Receive (job thanos-receive) accepts remote writes again",
    ),
    ("ThanosReceiveDown", None): (
        "Thanos Receive 10.0.0.7:19291 (job thanos-receive) is down",
        "Thanos Receive 10.0.0.7:19291 (job thanos-receive) is back",
    ),
    ("GuardianEvaluationFailing", "evaluation_failed"): (
        f"{_RULE} is failing (reason: evaluation failed)",
        f"{_RULE} evaluates again",
    ),
    ("GuardianEvaluationFailing", None): (
        f"{_RULE} is failing (reason: partial response)",
        f"{_RULE} evaluates again",
    ),
    ("GuardianEvaluationFailing", "iterations_missed"): (
        "Rule group guardian-gpu-idle is failing (reason: iterations missed)",
        "Rule group guardian-gpu-idle evaluates again",
    ),
}


def _pipeline_rules() -> list[Any]:
    out = []
    for pack in PACKS:
        for group in yaml.safe_load(pack.read_text(encoding="utf-8"))["groups"]:
            for rule in group["rules"]:
                if (rule.get("labels") or {}).get("guardian_class") == "pipeline":
                    reason = rule["labels"].get("reason")
                    name = f"{pack.parent.name}/{pack.name}:{rule['alert']}[{reason or ''}]"
                    out.append(pytest.param(rule, id=name))
    return out


PIPELINE_RULES = _pipeline_rules()


def _labels(rule: dict[str, Any]) -> LabelSet:
    """What the alert carries: its annotations' ``$labels.X``, static labels, cluster."""
    text = " ".join(str(v) for v in rule["annotations"].values())
    sample = {**SAMPLE, **SAMPLE_FOR.get(rule["alert"], {})}
    named = {n: sample.get(n, f"{n}-1") for n in re.findall(r"\$labels\.(\w+)", text)}
    return LabelSet(
        {**named, "cluster": SAMPLE["cluster"], **rule["labels"], "alertname": rule["alert"]}
    )


def _annotations(rule: dict[str, Any], labels: LabelSet) -> LabelSet:
    """The annotations with ``{{ $labels.X }}`` filled in and other template parts dropped."""
    out = {}
    for key, value in rule["annotations"].items():
        text = re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels[m.group(1)], value)
        out[key] = re.sub(r"\{\{[^}]*\}\}", "", text)
    return LabelSet(out)


def _transition(
    kind: TransitionKind, rule: dict[str, Any], labels: LabelSet, at: float
) -> AlertTransition:
    return AlertTransition(
        kind=kind,
        previous=AlertState.PENDING if kind is TransitionKind.FIRING else AlertState.FIRING,
        group="pipeline",
        rule=rule["alert"],
        labels=labels,
        annotations=_annotations(rule, labels),
        value=1.0,
        active_at=T0,
        at=at,
        evidence=Evidence(EvaluationHealth.OK, at, "q"),
    )


def _fired(rule: dict[str, Any], context: OwnerContext | None = None) -> Finding:
    t = _transition(TransitionKind.FIRING, rule, _labels(rule), T0 + 300)
    done = apply_transition(None, t, RULES, context)
    assert done is not None
    return done[0]


def _resolved(rule: dict[str, Any]) -> tuple[Finding, HistoryEntry]:
    t = _transition(TransitionKind.RESOLVED, rule, _labels(rule), T0 + OUT_FOR)
    done = apply_transition(_fired(rule), t, RULES, None)
    assert done is not None
    return done


def _fields(payload: SlackPayload) -> dict[str, str]:
    (section,) = [b for b in payload.blocks if "fields" in b]
    pairs = (item["text"].partition("\n") for item in section["fields"])
    return {name.strip("*"): value for name, _, value in pairs}


def _expected(rule: dict[str, Any]) -> tuple[str, str]:
    key = (rule["alert"], rule["labels"].get("reason"))
    assert key in EXPECTED, f"{key}: a new pipeline rule; give it words and a line in EXPECTED"
    return EXPECTED[key]


@pytest.mark.parametrize("rule", PIPELINE_RULES)
def test_a_firing_pipeline_alert_names_the_problem_and_what_is_affected(
    rule: dict[str, Any],
) -> None:
    title, _ = _expected(rule)
    f = _fired(rule)
    payload = render_parent(f, T0 + 600)
    parse_content(payload.to_json())  # Slack's Block Kit limits
    assert payload.blocks[0]["text"]["text"] == f":red_circle: [FIRING] {f.severity} · {title}"
    fields = _fields(payload)
    assert not WASTE_FIELDS & set(fields)
    assert fields["Alert"] == rule["alert"]
    assert fields["Ongoing for"] == "10m"
    assert fields["Affected"].splitlines() == list(describe(f.labels, f.alertname).affected)
    for name in ("node", "instance", "group", "rule", "remote_name"):
        if name in f.labels:
            assert f.labels[name] in fields["Affected"]
    assert fields.get("Reason") == f.labels.get("reason")
    assert rule["annotations"]["summary"] in payload.blocks[1]["text"]["text"]
    assert (f.cost, f.workload) == (None, None)
    text = preview(payload)
    assert "unknown" not in text.lower()
    summary = rule["annotations"]["summary"]
    assert payload.text == f"[FIRING] {f.severity} {rule['alert']}: {title} - {summary}"


@pytest.mark.parametrize("rule", PIPELINE_RULES)
def test_a_resolved_pipeline_alert_says_what_recovered_and_after_how_long(
    rule: dict[str, Any],
) -> None:
    _, recovered = _expected(rule)
    f, entry = _resolved(rule)
    assert entry.text == f"{recovered} after 12m."
    parent = render_parent(f, T0 + 3600)
    parse_content(parent.to_json())
    header = parent.blocks[0]["text"]["text"]
    assert header == f":white_check_mark: [RESOLVED] {f.severity} · {recovered} after 12m"
    assert _fields(parent)["Lasted"] == "12m"
    assert fallback_text(f) == f"[RESOLVED] {f.severity} {rule['alert']}: {recovered} after 12m"
    reply = render_reply(entry, f, f.alertname)
    parse_content(reply.to_json())
    where = describe(f.labels, f.alertname).where
    assert reply.text == f"[RESOLVED] {rule['alert']} ({where}): {recovered} after 12m."
    assert f"*RESOLVED* `{where}` · {recovered} after 12m." in reply.blocks[0]["text"]["text"]
    assert " /" not in reply.text
    assert "unknown" not in preview(reply).lower()


@pytest.mark.parametrize("rule", PIPELINE_RULES)
def test_a_pipeline_alert_reminds_that_it_still_fires(rule: dict[str, Any]) -> None:
    f = _fired(rule)
    ops = plan_reminder(thread="t", finding=f, number=1, summary=None, webhook=False)
    assert [op.entry.text for op in ops if op.entry is not None] == ["Reminder: still firing."]


def test_every_shipped_pipeline_rule_is_read() -> None:
    names = {p.values[0]["alert"] for p in PIPELINE_RULES}
    assert {"GpuExporterDown", "GpuMetricsGap", "GuardianEvaluationFailing"} <= names
    assert {(a, r) for a, r in EXPECTED} == {
        (p.values[0]["alert"], p.values[0]["labels"].get("reason")) for p in PIPELINE_RULES
    }


THANOS_POD = LabelSet(
    {
        "alertname": "ThanosReceiveDown",
        "severity": "critical",
        "guardian_class": "pipeline",
        "job": "thanos-receive",
        "instance": "10.0.0.7:19291",
        "namespace": "monitoring",
        "pod": "thanos-receive-0",
    }
)


def test_a_scrape_targets_pod_is_affected_not_a_workload() -> None:
    """``up`` of a Thanos Receive pod carries its namespace and pod; the owner lookup
    finds its StatefulSet. Still no workload, buttons, commands or cost."""
    rule = {"alert": "ThanosReceiveDown", "labels": dict(THANOS_POD), "annotations": {}}
    owner = OwnerContext(WorkloadRef("apps/v1", "StatefulSet", "monitoring", "thanos-receive"))
    t = _transition(TransitionKind.FIRING, rule, THANOS_POD, T0 + 300)
    done = apply_transition(None, t, RULES, owner)
    assert done is not None
    f = done[0]
    assert (f.workload, f.cost) == (None, None)
    text = preview(render_parent(f, T0 + 600, buttons=ButtonRules(enabled=True)))
    assert "Affected: target" not in text
    assert "Thanos Receive 10.0.0.7:19291 (job thanos-receive)" in text
    assert "pod monitoring/thanos-receive-0" in text
    for shown in ("Workload", "kubectl", "Cost", "Keep 4h"):
        assert shown not in text
    detail = render_detail(f, T0 + 600)
    assert detail.blocks[0]["text"]["text"].startswith("*10.0.0.7:19291 (job thanos-receive)* ·")
    group = render_group(summarise("g", f.alertname, "monitoring", [f, f], T0 + 600), T0 + 600)
    assert "`10.0.0.7:19291 (job thanos-receive)` · firing" in preview(group)


def test_a_pipeline_alert_of_another_name_is_named_by_its_labels() -> None:
    labels = LabelSet(
        {"alertname": "GpuDriverXid", "guardian_class": "pipeline", "node": "gn7", "reason": "x"}
    )
    rule = {"alert": "GpuDriverXid", "labels": dict(labels), "annotations": {}}
    f = _fired(rule)
    assert (
        render_parent(f, T0 + 600)
        .blocks[0]["text"]["text"]
        .endswith("· GpuDriverXid on node gn7 is firing (reason: x)")
    )
    f, entry = _resolved(rule)
    assert entry.text == "GpuDriverXid on node gn7 is over after 12m."
    bare = LabelSet({"alertname": "Lonely", "guardian_class": "pipeline"})
    f = _fired({"alert": "Lonely", "labels": dict(bare), "annotations": {}})
    payload = render_parent(f, T0 + 600)
    assert payload.blocks[0]["text"]["text"].endswith("· Lonely is firing")
    assert "Affected" not in _fields(payload)
    reply = render_reply(HistoryEntry(T0, Phase.RESOLVED, "x"), f, f.alertname)
    assert reply.text == "[RESOLVED] Lonely: x"


def test_the_example_in_docs_slack_md_is_what_is_rendered() -> None:
    labels = LabelSet(
        {
            "alertname": "GpuExporterDown",
            "severity": "warning",
            "guardian_class": "pipeline",
            "reason": "scrape_failing",
            "cluster": "prod-eu",
            "node": "gn2",
            "instance": "10.0.0.5:9400",
            "job": "guardian-exporter",
        }
    )
    notes = {
        "summary": "A GPU exporter is down, so its GPUs are not watched.",
        "description": "Prometheus cannot scrape the GPU Guardian exporter 10.0.0.5:9400 "
        "(job guardian-exporter) on node gn2, so idle GPUs on that node go unseen.",
    }
    rule = {"alert": "GpuExporterDown", "labels": dict(labels), "annotations": notes}
    doc = (ROOT / "docs/slack.md").read_text(encoding="utf-8")
    parent = preview(render_parent(_fired(rule), T0 + 600))
    assert parent.partition("\n\nAlert episode")[0] in doc
    f, entry = _resolved(rule)
    assert preview(render_reply(entry, f, f.alertname)).partition("\n\n")[0] in doc


def test_other_alerts_render_as_before() -> None:
    """Waste alerts keep their workload fields, header, texts and reminders."""
    f = firing()
    payload = render_parent(f, T0 + 3600)
    snapshot = json.loads((SNAPSHOTS / "parent_firing.json").read_text(encoding="utf-8"))
    assert payload.to_json() == snapshot
    assert payload.blocks[0]["text"]["text"] == ":red_circle: [FIRING] warning · GpuIdle"
    assert _fields(payload)["Workload"] == "Deployment train-llm"
    ended = _transition(
        TransitionKind.RESOLVED,
        {"alert": "GpuIdle", "annotations": {}},
        f.labels,
        T0 + 7200,
    )
    done = apply_transition(f, ended, RULES, None)
    assert done is not None
    assert done[1].text == "Alert resolved."
    reply = render_reply(done[1], done[0], f.alertname)
    assert reply.text == "[RESOLVED] GpuIdle ml-research/train-llm-7f9c-0: Alert resolved."
    ops = plan_reminder(thread="t", finding=f, number=1, summary=None, webhook=False)
    assert [op.entry.text for op in ops if op.entry is not None] == ["Reminder: still idle."]
