"""Alertmanager's answers, judged for remediation: silenced, inhibited, unknown, free."""

from __future__ import annotations

from guardian.engine.alertmanager.sending import SendSettings, outgoing_labels
from guardian.engine.alertmanager.suppression import alertname_filter, hold_reason, suppressions
from guardian.model.alertmanager_api import AlertmanagerView, AlertStatus, Silence, StoredAlert
from guardian.model.labels import LabelSet
from guardian.model.relabel_config import RelabelAction, RelabelConfig

IDLE = LabelSet({"alertname": "GpuIdle", "cluster": "c1", "node": "n1", "pod": "p-1"})
DOWN = LabelSet({"alertname": "GpuExporterDown", "cluster": "c1", "node": "n1"})
T = 1_796_160_000.0


def _as_is(labels: LabelSet) -> LabelSet | None:
    return labels


def stored(
    labels: LabelSet,
    *,
    silenced: tuple[str, ...] = (),
    inhibited: tuple[str, ...] = (),
    fp: str = "f1",
) -> StoredAlert:
    state = AlertStatus.SUPPRESSED if silenced or inhibited else AlertStatus.ACTIVE
    return StoredAlert(labels, fp, state, silenced, inhibited)


def silence(sid: str, who: str, ends: float, comment: str = "maint") -> Silence:
    return Silence(sid, who, comment, T - 60, ends, "active")


def test_silenced_names_who_and_until_when() -> None:
    view = AlertmanagerView(
        "am", (stored(IDLE, silenced=("s1",)),), {"s1": silence("s1", "alice", T + 3600)}
    )
    assert hold_reason(IDLE, _as_is, [view]) == (
        "silenced in Alertmanager by alice until 2026-12-01T22:20:00Z (silence s1: maint)"
    )


def test_several_silences_name_the_one_ending_last() -> None:
    view = AlertmanagerView(
        "am",
        (stored(IDLE, silenced=("s1", "s2")),),
        {"s1": silence("s1", "alice", T + 60), "s2": silence("s2", "bob", T + 7200, "")},
    )
    reason = hold_reason(IDLE, _as_is, [view])
    assert reason == (
        "silenced in Alertmanager by bob until 2026-12-01T23:20:00Z (silence s2; 1 more silence)"
    )


def test_silence_details_unknown_still_hold() -> None:
    view = AlertmanagerView("am", (stored(IDLE, silenced=("s9",)),), silences_error="boom")
    assert hold_reason(IDLE, _as_is, [view]) == "silenced in Alertmanager (silence s9)"


def test_inhibited_names_the_inhibiting_alert_when_listed() -> None:
    view = AlertmanagerView("am", (stored(IDLE, inhibited=("fd",)), stored(DOWN, fp="fd")))
    assert hold_reason(IDLE, _as_is, [view]) == (
        "inhibited in Alertmanager by GpuExporterDown{cluster=c1,node=n1}"
    )
    view = AlertmanagerView("am", (stored(IDLE, inhibited=("zz",)),))
    assert hold_reason(IDLE, _as_is, [view]) == "inhibited in Alertmanager by alert zz"


def test_an_alert_alertmanager_does_not_know_is_missing_data() -> None:
    reason = hold_reason(IDLE, _as_is, [AlertmanagerView("am", ())])
    assert reason is not None
    assert "GpuIdle is not in Alertmanager yet" in reason
    assert "missing data" in reason


def test_active_and_listed_is_free() -> None:
    assert hold_reason(IDLE, _as_is, [AlertmanagerView("am", (stored(IDLE),))]) is None


def test_found_by_the_labels_it_is_sent_with() -> None:
    settings = SendSettings(
        external_labels={"cluster": "ignored", "replica": "a"},
        relabel=(RelabelConfig(("pod",), target_label="workload_pod"),),
    )

    def outgoing(labels: LabelSet) -> LabelSet | None:
        return outgoing_labels(labels, settings)

    sent = LabelSet({**IDLE, "replica": "a", "workload_pod": "p-1"})
    view = AlertmanagerView("am", (stored(sent, silenced=("s1",)),), {"s1": silence("s1", "a", T)})
    assert hold_reason(IDLE, outgoing, [view]) is not None
    # A Prometheus as the source adds external labels we do not know: still found.
    extra = LabelSet({**IDLE, "prometheus": "monitoring/k8s"})
    assert hold_reason(IDLE, _as_is, [AlertmanagerView("am", (stored(extra),))]) is None


def test_an_alert_relabelling_drops_is_never_held() -> None:
    drop = SendSettings(
        relabel=(RelabelConfig(("alertname",), regex="GpuIdle", action=RelabelAction.DROP),)
    )
    assert hold_reason(IDLE, lambda labels: outgoing_labels(labels, drop), []) is None


def test_one_answer_is_enough_and_none_is_missing_data() -> None:
    one = suppressions(
        [IDLE], [AlertmanagerView("am-1", (stored(IDLE),))], ["am-2: refused"], _as_is
    )
    assert one.checked
    assert one.reason(IDLE) is None
    none = suppressions([IDLE], [], ["am-1: refused", "am-2: timed out"], _as_is)
    reason = none.reason(IDLE)
    assert reason is not None
    assert reason.startswith("no Alertmanager answered, so silences are unknown (am-1: refused;")


def test_the_filter_is_one_regex_matcher_over_the_names() -> None:
    assert alertname_filter([IDLE, DOWN, IDLE]) == 'alertname=~"GpuExporterDown|GpuIdle"'
    assert alertname_filter([LabelSet({"alertname": "a.b"})]) == 'alertname=~"a\\\\.b"'
