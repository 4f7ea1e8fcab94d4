"""The public API: context, injected query function, and errors that never escape ``expand``."""

from __future__ import annotations

import pytest

from guardian.engine.templates import (
    ALERT_PREAMBLE,
    ExecError,
    QuerySample,
    TemplateContext,
    expand_template,
    parse_alert_template,
    parse_template,
)

CTX = TemplateContext(
    labels={"instance": "gpu-3:9400", "pod": "train"},
    value=0.9512,
    external_labels={"cluster": "eu-1"},
    external_url="https://prom.example.com/prometheus",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{ $externalLabels.cluster }}|{{ .ExternalLabels.cluster }}", "eu-1|eu-1"),
        (
            "{{ $externalURL }}|{{ externalURL }}|{{ pathPrefix }}",
            "https://prom.example.com/prometheus|https://prom.example.com/prometheus|/prometheus",
        ),
        ("{{ humanizePercentage $value }} on {{ $labels.pod }}", "95.12% on train"),
        ("{{ .Value }}", "0.9512"),
        ("{{ $labels.instance | stripPort }}", "gpu-3"),
        ("plain text, no actions", "plain text, no actions"),
        ("", ""),
    ],
)
def test_expand(text: str, expected: str) -> None:
    assert parse_template(text).expand(CTX) == expected


def test_query_uses_the_injected_function() -> None:
    asked: list[str] = []

    def query(expr: str) -> list[QuerySample]:
        asked.append(expr)
        return [QuerySample({"gpu": "1"}, 3.0), QuerySample({"gpu": "0"}, 4.0)]

    ctx = TemplateContext(labels={}, value=1.0, query=query)
    text = '{{ range sortByLabel "gpu" (query "up") }}{{ label "gpu" . }}={{ value . }} {{ end }}'
    assert parse_template(text).expand(ctx) == "0=4 1=3 "
    assert asked == ["up"]


def test_query_failure_becomes_an_expansion_error() -> None:
    def query(expr: str) -> list[QuerySample]:
        raise TimeoutError("query timed out")

    ctx = TemplateContext(labels={}, value=1.0, query=query)
    out = parse_alert_template('{{ query "up" }}', "GpuIdle").expand(ctx)
    assert out == (
        "<error expanding template: error executing template __alert_GpuIdle: template: "
        '__alert_GpuIdle:1:115: executing "__alert_GpuIdle" at <query "up">: '
        "error calling query: query timed out>"
    )


def test_without_a_query_function_query_fails_at_expansion() -> None:
    out = parse_template('{{ query "up" }}', "t").expand(CTX)
    assert out.startswith("<error expanding template: error executing template t:")
    assert out.endswith("error calling query: no query function is configured for templates>")


def test_execute_raises_what_expand_reports() -> None:
    template = parse_template("{{ humanize $labels }}", "t")
    with pytest.raises(ExecError, match="can't convert map\\[string\\]string to float"):
        template.execute(CTX)
    assert template.expand(CTX).startswith("<error expanding template:")


def test_runaway_recursion_is_an_expansion_error() -> None:
    text = '{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}'
    out = parse_template(text, "t").expand(CTX)
    assert out.startswith("<error expanding template:")
    assert "exceeded maximum template depth" in out


def test_expand_template_reports_parse_errors_like_prometheus() -> None:
    assert expand_template("{{ $value }}", CTX) == "0.9512"
    out = expand_template("{{ nofunc }}", CTX, name="__alert_X")
    assert out == (
        "<error expanding template: error parsing template __alert_X: "
        'template: __alert_X:1:4: function "nofunc" not defined>'
    )


def test_the_preamble_is_prometheus_s() -> None:
    assert ALERT_PREAMBLE == (
        "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}"
        "{{$externalURL := .ExternalURL}}{{$value := .Value}}"
    )


def test_a_template_can_be_expanded_many_times_and_sortbylabel_does_not_leak() -> None:
    results = [QuerySample({"k": "b"}, 1.0), QuerySample({"k": "a"}, 2.0)]
    ctx = TemplateContext(labels={}, value=0.0, query=lambda _expr: results)
    template = parse_template('{{ range sortByLabel "k" (query "x") }}{{ label "k" . }}{{ end }}')
    assert template.expand(ctx) == template.expand(ctx) == "ab"
    assert [s.labels["k"] for s in results] == ["b", "a"]
