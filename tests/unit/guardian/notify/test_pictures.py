"""Which changes get an evidence picture, and what it is asked to show. Pure: the
planner with literal state and times; the settings' checks at load."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from guardian.app.settings.pictures import PictureSettings
from guardian.engine.notify.lifecycle import OpKind
from guardian.engine.notify.picture_plan import fill
from guardian.engine.notify.planner import (
    PlannerSettings,
    plan_remediation,
    plan_tick,
    plan_transitions,
)
from guardian.engine.notify.routing import Routes
from guardian.engine.notify.state import NotifyPlan, NotifyState
from guardian.engine.promql import parse_expr
from guardian.model.alerts import (
    AlertState,
    AlertTransition,
    EvaluationHealth,
    Evidence,
    TransitionKind,
)
from guardian.model.evidence_picture import Moment, PictureRequest
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from tests.unit.guardian.notify.samples import ANNOTATIONS, LABELS, RULES, T0, WORKLOAD, written

PICTURES = PictureSettings().rules()
SETTINGS = PlannerSettings(rules=RULES, routes=Routes("#alerts"), grouping=False, pictures=PICTURES)


def _firing(pod: str = "p", alertname: str = "GpuIdle", **labels: str) -> AlertTransition:
    lbls = LabelSet({**LABELS, "pod": pod, "alertname": alertname, **labels})
    return AlertTransition(
        TransitionKind.FIRING, AlertState.PENDING, "g", alertname, lbls, ANNOTATIONS,
        0.01, T0, T0 + 300, Evidence(EvaluationHealth.OK, T0 + 300, "q"),
    )  # fmt: skip


def _pictures(plan: NotifyPlan) -> list[PictureRequest]:
    out = []
    for e in plan.outbox:
        if e.op.kind is OpKind.PICTURE:
            assert e.op.picture is not None
            out.append(e.op.picture)
    return out


def _reclaim(t: AlertTransition, at: float) -> RemediationEvent:
    return RemediationEvent(
        "wl-1", WORKLOAD, LadderStep.RECLAIM, StepOutcome.APPLIED, at, "p", "idle", t.labels, seq=1
    )


def test_a_new_episode_gets_its_parent_then_its_picture_of_the_idle_window() -> None:
    t = _firing()

    plan = plan_transitions(NotifyState(), [t], T0 + 300, SETTINGS)

    kinds = [e.op.kind for e in plan.outbox]
    assert kinds == [OpKind.POST, OpKind.PICTURE]  # the parent first: its thread
    [picture] = _pictures(plan)
    since = T0 - 1800  # the 30m window before the alert went active
    assert picture.moment is Moment.OPENED
    assert picture.window == (since, T0 + 300)
    assert picture.start == since - 0.25 * (T0 + 300 - since)
    assert (picture.end, picture.floor) == (T0 + 300, 0.05)
    assert 1.0 <= picture.step <= (picture.end - picture.start) / 200
    legends = [name for name, _ in picture.series]
    assert legends == ["utilization", "busy time (2m rate)"]
    selector = 'node="gpu-node-12",uuid="GPU-1234"'  # no cluster: it may be external
    assert picture.series[0][1] == f"guardian_gpu_utilization_ratio{{{selector}}}"
    assert picture.allocation is not None
    assert 'pod="p"' in picture.allocation
    assert "30m" not in picture.comment
    assert "UTC" in picture.comment
    assert picture.filename.endswith("-opened.png")


def test_the_reclaim_gets_a_second_picture_up_to_the_reclaim_and_nothing_else_does() -> None:
    t = _firing()
    state = written(NotifyState(), plan_transitions(NotifyState(), [t], T0 + 300, SETTINGS))
    state = dataclasses.replace(state, unclaimed=frozenset(state.episodes))

    plan = plan_remediation(state, [_reclaim(t, T0 + 900)], T0 + 905, SETTINGS, cursor=0)

    [picture] = _pictures(plan)
    assert (picture.moment, picture.end, picture.episode) == (Moment.RECLAIMED, T0 + 900, "wl-1")
    assert picture.filename == "evidence-wl-1-reclaimed.png"
    # A reminder, a resolve after it: no more pictures.
    state = written(state, plan)
    later = plan_tick(state, T0 + 900 + 5 * 3600, SETTINGS)
    resolved = dataclasses.replace(
        t, kind=TransitionKind.RESOLVED, previous=AlertState.FIRING, at=T0 + 1000
    )
    assert _pictures(later) == []
    assert _pictures(plan_transitions(state, [resolved], T0 + 1000, SETTINGS)) == []


def test_no_picture_when_grouped_by_webhook_off_or_for_an_alert_without_a_query() -> None:
    alerts = [_firing(f"p{i}") for i in range(3)]
    grouped = dataclasses.replace(SETTINGS, grouping=True, min_alerts=2)
    assert _pictures(plan_transitions(NotifyState(), alerts, T0, grouped)) == []
    webhook = dataclasses.replace(SETTINGS, webhook=True)
    assert _pictures(plan_transitions(NotifyState(), alerts[:1], T0, webhook)) == []
    off = dataclasses.replace(SETTINGS, pictures=None)
    assert _pictures(plan_transitions(NotifyState(), alerts[:1], T0, off)) == []
    other = _firing(alertname="GpuExporterDown")
    assert _pictures(plan_transitions(NotifyState(), [other], T0, SETTINGS)) == []


def test_every_shipped_picture_query_parses_with_any_label_value() -> None:
    keys = ("cluster", "node", "uuid", "namespace", "pod")
    hostile = LabelSet(dict.fromkeys(keys, 'a"b\\c\n{d}'))
    for name, query in PICTURES.queries.items():
        for _, template in (*query.series, ("allocation", query.allocation or "up")):
            expr = fill(template, hostile)
            parse_expr(expr)  # the value stays inside its string literal
            assert '"a\\"b\\\\c\\n{d}"' in expr, name
    # An absent label matches series without it, as PromQL reads `label=""`.
    assert fill('m{cluster="$cluster"}', LabelSet({})) == 'm{cluster=""}'
    assert fill('m{pod=~"^x.*$"}', LabelSet({})) == 'm{pod=~"^x.*$"}'  # a bare $ stays


def test_a_picture_query_that_is_not_promql_is_refused_at_load_naming_the_alert() -> None:
    bad = {"alerts": {"GpuIdle": {"title": "x", "series": {"u": "rate(m[5m]"}}}}
    with pytest.raises(ValidationError) as caught:
        PictureSettings.model_validate(bad)
    [error] = caught.value.errors()
    assert error["loc"] == ("alerts", "GpuIdle", "series")
    assert "not PromQL" in error["msg"]
    empty = {"alerts": {"GpuIdle": {"title": "x", "series": {}}}}
    with pytest.raises(ValidationError):
        PictureSettings.model_validate(empty)


def test_a_request_survives_the_outbox_row() -> None:
    [picture] = _pictures(plan_transitions(NotifyState(), [_firing()], T0 + 300, SETTINGS))
    assert PictureRequest.from_dict(picture.to_dict()) == picture
