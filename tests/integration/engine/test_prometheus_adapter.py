"""The query adapter against a real Prometheus, directly and through a misbehaving proxy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.local_prometheus import free_loopback_port
from guardian.adapters.prometheus import (
    LabelCache,
    PrometheusAccess,
    PrometheusQuerier,
    QueryFailedError,
    QueryRejectedError,
    _parse,
)
from guardian.adapters.query_transport import QueryTransport
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig
from guardian.model.labels import LabelSet
from guardian_common.redact import Secrets
from tests.integration.engine.conftest import T0, openmetrics, series

pytestmark = pytest.mark.e2e

DATA = openmetrics(series("m", {"a": [1.0] * 10, "b": [2.0] * 10}))


def test_instant_query_at_the_evaluation_timestamp(prometheus: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    outcomes: list[str] = []
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(prom.url, timeout=5)),
        observer=lambda o, _s: outcomes.append(o),
    )

    result = querier.query("m", T0 + 300)

    assert sorted((s.labels["instance"], s.value) for s in result.samples) == [
        ("a", 1.0),
        ("b", 2.0),
    ]
    assert result.warnings == ()
    assert querier.query("m", T0 - 3600).samples == ()  # before the data: nothing
    scalar = querier.query("scalar(sum(m))", T0 + 60).samples
    assert [(dict(s.labels), s.value) for s in scalar] == [({}, 3.0)]
    assert outcomes == ["success", "success", "success"]
    assert "m" in querier.metric_names()
    querier.close()


def test_post_asks_the_same_as_get(prometheus: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    get, post = (
        PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=5), method=m))
        for m in ("GET", "POST")
    )
    for expr in ("m", 'sum by (instance) (m{instance=~"a|b"}) > 1'):
        assert post.query(expr, T0 + 300) == get.query(expr, T0 + 300)
    assert post.query_range("m", T0, T0 + 300, 60) == get.query_range("m", T0, T0 + 300, 60)
    assert "m" in post.metric_names()  # the label-values API takes GET only
    get.close()
    post.close()


def test_a_series_still_in_the_answer_keeps_its_label_set_object(prometheus: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=5)))

    first = {s.labels["instance"]: s.labels for s in querier.query("m", T0 + 300).samples}
    again = {s.labels["instance"]: s.labels for s in querier.query("m", T0 + 360).samples}
    only_a = querier.query('m{instance="a"} * 2', T0 + 360).samples

    # The same objects (no new LabelSet for a series seen in the last answer to the same
    # expression), equal to what a fresh decode gives; another expression decodes anew.
    assert all(again[k] is first[k] for k in ("a", "b"))
    assert first["a"] == LabelSet(dict(first["a"]))
    assert only_a[0].labels == first["a"].without("__name__")
    assert only_a[0].labels is not first["a"]
    querier.close()


WIDE = openmetrics(series("w", {f"i{k}": [1.0] * 10 for k in range(12)}))


def test_template_queries_do_not_push_a_rules_label_sets_out(prometheus: Any) -> None:
    # A rule answer of 12 series, then more one-series queries (as its `query` templates
    # send, one per alert) than the cache holds expressions: its label sets stay cached.
    prom = prometheus(openmetrics=WIDE)
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=5)))

    first = {s.labels["instance"]: s.labels for s in querier.query("w", T0 + 300).samples}
    for k in range(300):
        querier.query(f'w{{instance="i{k % 12}"}} + {k}', T0 + 300)
    again = {s.labels["instance"]: s.labels for s in querier.query("w", T0 + 360).samples}

    assert len(first) == 12
    assert all(again[k] is first[k] for k in first)
    querier.close()


def test_the_environments_proxy_settings_are_resolved_once_per_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "prom.internal")
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)

    proxied = QueryTransport(HttpClientConfig("http://prom.example:9090"), Secrets())
    bypassed = QueryTransport(HttpClientConfig("http://prom.internal:9090"), Secrets())
    loopback = QueryTransport(
        HttpClientConfig("http://prom.example:9090"), Secrets(), trust_env=False
    )

    assert proxied._route.proxy == ("proxy.example", 3128, False)
    assert bypassed._route.proxy is None
    assert loopback._route.proxy is None  # a server we started: the environment is ignored


def test_decoding_sorts_labels_a_server_sent_unsorted() -> None:
    body = {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": {"b": "2", "a": "1"}, "value": [0, "1"]}],
        },
    }
    seen: LabelCache = {}
    for _ in range(2):
        result, seen = _parse(body, False, seen)
        (sample,) = result.samples
        assert sample.labels.items_sorted == (("a", "1"), ("b", "2"))


def test_bad_query_is_permanent_400_and_execution_error_is_422(prometheus: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(prom.url, timeout=5)))

    with pytest.raises(QueryRejectedError, match="HTTP 400 bad_data") as bad:
        querier.query("sum(", T0)
    assert bad.value.reason == "bad_query"

    with pytest.raises(QueryRejectedError, match="HTTP 422 execution") as execution:
        querier.query("m + on() m", T0 + 60)  # many-to-many matching
    assert execution.value.reason == "execution"


def test_connection_refused_is_transient() -> None:
    port = free_loopback_port()
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(f"http://127.0.0.1:{port}", timeout=2))
    )

    with pytest.raises(QueryFailedError) as info:
        querier.query("up", T0)
    assert info.value.reason == "connection"


def test_503_timeout_warnings_and_thanos_parameters(prometheus: Any, query_proxy: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    proxy = query_proxy(prom.url)
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(proxy.url, timeout=1), thanos=True)
    )

    proxy.behaviour.status = 503
    with pytest.raises(QueryFailedError, match="HTTP 503 timeout") as unavailable:
        querier.query("m", T0)
    assert unavailable.value.reason == "timeout"
    assert len(proxy.requests) == 1  # a 503 is not retried

    proxy.behaviour.status = None
    proxy.behaviour.delay_seconds = 1.5
    with pytest.raises(QueryFailedError, match="timed out") as slow:
        querier.query("m", T0)
    assert slow.value.reason == "timeout"

    proxy.behaviour.delay_seconds = 0
    proxy.behaviour.warnings = ("store 10.0.0.1:10901 unreachable",)
    result = querier.query("m", T0 + 60)
    assert result.warnings == ("store 10.0.0.1:10901 unreachable",)
    assert result.partial  # Thanos mode: a warned answer is a partial one
    assert len(result.samples) == 2

    last = proxy.requests[-1]
    assert last["partial_response"] == "false"
    assert last["dedup"] == "true"
    assert last["time"] == f"{T0 + 60:.3f}"


def test_bearer_token_file_is_reread(prometheus: Any, query_proxy: Any, tmp_path: Path) -> None:
    prom = prometheus(openmetrics=DATA)
    proxy = query_proxy(prom.url)
    token = tmp_path / "token"
    token.write_text("first\n")
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(proxy.url, timeout=5, bearer_token_file=str(token)))
    )

    querier.query("m", T0)
    token.write_text("rotated")
    querier.query("m", T0)

    assert [r["authorization"] for r in proxy.requests] == ["Bearer first", "Bearer rotated"]
    assert "partial_response" not in proxy.requests[0]


def test_basic_auth(prometheus: Any, query_proxy: Any) -> None:
    prom = prometheus(openmetrics=DATA)
    proxy = query_proxy(prom.url)
    querier = PrometheusQuerier(
        PrometheusAccess(
            HttpClientConfig(proxy.url, basic_auth=BasicAuthConfig("u", "p")),
        )
    )
    querier.query("m", T0)
    assert proxy.requests[0]["authorization"] == "Basic dTpw"


def test_password_file_is_reread(prometheus: Any, query_proxy: Any, tmp_path: Path) -> None:
    prom = prometheus(openmetrics=DATA)
    proxy = query_proxy(prom.url)
    password = tmp_path / "password"
    password.write_text("first\n")
    auth = BasicAuthConfig("u", password_file=str(password))
    querier = PrometheusQuerier(PrometheusAccess(HttpClientConfig(proxy.url, basic_auth=auth)))

    querier.query("m", T0)
    password.write_text("rotated")
    querier.query("m", T0)

    assert [r["authorization"] for r in proxy.requests] == [
        "Basic dTpmaXJzdA==",  # u:first
        "Basic dTpyb3RhdGVk",  # u:rotated
    ]
