"""The demo's timeline lines: elapsed time, source column, indented detail, alert subjects."""

from __future__ import annotations

import io

from testbed.demo.timeline import (
    Timeline,
    alert_subject,
    format_detail,
    format_line,
    slack_preview,
    slack_title,
)


def test_line_has_elapsed_seconds_and_a_source_column() -> None:
    assert format_line(3.25, "alert", "GpuIdle firing") == "[   3.2s] alert      GpuIdle firing"
    assert format_line(123.0, "kubernetes", "x") == "[ 123.0s] kubernetes x"


def test_detail_lines_are_indented_under_the_text() -> None:
    [line] = format_detail(["Cluster: demo"])
    assert line == " " * 20 + "│ Cluster: demo"
    # The bar sits in the column just before the event text.
    assert format_line(0, "slack", "new").index("new") == line.index("│") + 1


def test_alert_subjects() -> None:
    pod = {"alertname": "GpuIdle", "namespace": "ml", "pod": "p-1", "node": "n1", "gpu": "2"}
    assert alert_subject(pod) == "ml/p-1 on n1 GPU 2"
    target = {
        "alertname": "GpuExporterDown",
        "instance": "127.0.0.1:9400",
        "reason": "scrape_failing",
    }
    assert alert_subject(target) == "target 127.0.0.1:9400 (scrape_failing)"
    assert alert_subject({"alertname": "GpuMetricsGap", "node": "n2"}) == "on n2"
    assert alert_subject({"alertname": "X", "cluster": "c", "job": "j"}) == "(no labels)"
    assert alert_subject({"alertname": "X", "group": "g"}) == "group=g"


def test_slack_messages_render_through_the_notifier_preview() -> None:
    blocks: list[dict[str, object]] = [
        {"type": "header", "text": {"type": "plain_text", "text": ":red_circle: [FIRING] GpuIdle"}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": "*Node*\nnode1"}]},
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": "<https://x.example|Runbook>"}],
        },
    ]
    lines = slack_preview("fallback", blocks)
    assert lines[0] == ":red_circle: [FIRING] GpuIdle"
    assert "Node: node1" in lines
    assert "Runbook (https://x.example)" in lines
    assert slack_title("fallback", blocks) == ":red_circle: [FIRING] GpuIdle"
    assert slack_preview("plain\ntext", None) == ["plain", "text"]
    assert slack_title("plain\ntext", []) == "plain"


def test_timeline_prints_events_with_the_injected_clock() -> None:
    now = [100.0]
    out = io.StringIO()
    timeline = Timeline(lambda: now[0], out)
    now[0] = 101.5
    timeline.event("engine", "started", ["detail"])
    timeline.heading("outcomes")
    assert out.getvalue().splitlines() == [
        "[   1.5s] engine     started",
        " " * 20 + "│ detail",
        "",
        "== outcomes",
    ]
