"""The POST /api/v2/alerts body byte for byte as Prometheus 2.42 writes it, and the
parsing of Alertmanager's and a ruler's answers."""

from __future__ import annotations

import json

import pytest

from guardian.adapters.alertmanager import (
    AlertmanagerClient,
    encode_alerts,
    format_time,
    parse_alerts,
    parse_silences,
)
from guardian.adapters.prometheus_rules import RulesRejected, parse_rule_groups
from guardian.model.alertmanager_api import AlertStatus, PostableAlert
from guardian.model.alerts import AlertState
from guardian.model.http_client import HttpClientConfig
from guardian.model.labels import LabelSet


def test_body_key_order_escaping_and_times() -> None:
    alert = PostableAlert(
        LabelSet({"pod": "p<1>", "alertname": "GpuIdle"}),
        LabelSet({"summary": 'a "b" & c\n', "description": "é\u2028"}),
        starts_at=1_700_000_000.1239,
        ends_at=1_700_000_240.9999,
        generator_url="http://g/graph?g0.expr=up&g0.tab=1",
    )
    assert encode_alerts([alert]) == (
        b'[{"annotations":{"description":"\xc3\xa9\\u2028","summary":"a \\"b\\" \\u0026 c\\n"},'
        b'"endsAt":"2023-11-14T22:17:20.999Z","startsAt":"2023-11-14T22:13:20.123Z",'
        b'"generatorURL":"http://g/graph?g0.expr=up\\u0026g0.tab=1",'
        b'"labels":{"alertname":"GpuIdle","pod":"p\\u003c1\\u003e"}}]'
    )


def test_no_annotations_no_key_and_the_json_is_valid() -> None:
    alert = PostableAlert(LabelSet({"a": "\x01"}), LabelSet(), 0.0, 1.0, "u")
    body = encode_alerts([alert, alert])
    assert body.startswith(b'[{"endsAt":"1970-01-01T00:00:01.000Z"')
    assert json.loads(body)[1]["labels"] == {"a": "\x01"}


@pytest.mark.parametrize(
    ("ts", "text"),
    [
        (1_700_000_000.0, "2023-11-14T22:13:20.000Z"),
        (1_700_000_000.0017, "2023-11-14T22:13:20.001Z"),  # truncated, not rounded
        (1_700_000_000.999, "2023-11-14T22:13:20.999Z"),
    ],
)
def test_times_have_milliseconds_truncated(ts: float, text: str) -> None:
    assert format_time(ts) == text


def test_alert_and_silence_answers() -> None:
    alerts = parse_alerts(
        [
            {
                "labels": {"alertname": "GpuIdle"},
                "fingerprint": "abc",
                "status": {"state": "suppressed", "silencedBy": ["s1"], "inhibitedBy": []},
            },
            {"labels": {}, "fingerprint": "d", "status": {"state": "weird"}},
        ]
    )
    assert alerts[0].state is AlertStatus.SUPPRESSED
    assert alerts[0].silenced_by == ("s1",)
    assert alerts[1].state is AlertStatus.UNPROCESSED
    silences = parse_silences(
        [
            {
                "id": "s1",
                "createdBy": "alice",
                "comment": "maint",
                "startsAt": "2023-11-14T22:13:20.123Z",
                "endsAt": "2023-11-14T23:13:20Z",
                "status": {"state": "active"},
            }
        ]
    )
    assert silences["s1"].ends_at == 1_700_003_600.0
    assert silences["s1"].created_by == "alice"


def test_the_name_shown_has_no_credentials() -> None:
    client = AlertmanagerClient(HttpClientConfig("https://u:secret@am.example:9093/prefix"))
    assert "secret" not in client.name
    assert client.name.endswith("am.example:9093/prefix")
    client.close()


def test_ruler_answer() -> None:
    body = {
        "status": "success",
        "data": {
            "groups": [
                {
                    "name": "g",
                    "file": "/etc/rules/x.yaml",
                    "interval": 60,
                    "rules": [
                        {
                            "type": "alerting",
                            "name": "GpuIdle",
                            "query": "up == 0",
                            "duration": 300,
                            "labels": {"severity": "warning"},
                            "health": "ok",
                            "lastError": "",
                            "lastEvaluation": "2023-11-14T22:13:20.5Z",
                            "alerts": [
                                {
                                    "labels": {"alertname": "GpuIdle", "pod": "p"},
                                    "annotations": {"summary": "s"},
                                    "state": "firing",
                                    "activeAt": "2023-11-14T22:00:00Z",
                                    "value": "1e+00",
                                }
                            ],
                        },
                        {"type": "recording", "name": "r", "query": "x"},
                        {
                            "type": "alerting",
                            "name": "Never",
                            "query": "x",
                            "health": "unknown",
                            "lastEvaluation": "0001-01-01T00:00:00Z",
                        },
                    ],
                }
            ]
        },
    }
    (group,) = parse_rule_groups(body)
    assert group.interval == 60.0
    idle, never = group.rules
    assert idle.last_evaluation == 1_700_000_000.5
    assert idle.alerts[0].state is AlertState.FIRING
    assert idle.alerts[0].value == 1.0
    assert idle.alerts[0].active_at == 1_699_999_200.0
    assert never.last_evaluation is None
    with pytest.raises(RulesRejected):
        parse_rule_groups({"status": "error"})
