"""The adapter's range queries: the parameters sent, Thanos's included, and the matrix read."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.adapters.prometheus import (
    PrometheusAccess,
    PrometheusQuerier,
    QueryRejectedError,
    _parse_matrix,
)
from guardian.model.history import TimeRange
from guardian.model.http_client import HttpClientConfig


def test_range_parameters_name_the_steps_and_ask_thanos_for_complete_deduplicated_data() -> None:
    plain = PrometheusQuerier(PrometheusAccess(HttpClientConfig("http://p:9090")))
    thanos = PrometheusQuerier(PrometheusAccess(HttpClientConfig("http://t:9090"), thanos=True))
    span = TimeRange(1000.5, 1600.5, 60.0)

    assert plain.range_params("up", span) == {
        "query": "up",
        "start": "1000.500",
        "end": "1600.500",
        "step": "60.000",
    }
    assert thanos.range_params("up", span)["partial_response"] == "false"
    assert thanos.range_params("up", span)["dedup"] == "true"
    plain.close()
    thanos.close()


def test_a_matrix_is_read_with_millisecond_timestamps_and_warnings_mean_partial_on_thanos() -> None:
    body: dict[str, Any] = {
        "status": "success",
        "warnings": ["store down"],
        "data": {
            "resultType": "matrix",
            "result": [{"metric": {"a": "1"}, "values": [[1000.5, "1"], [1060.5, "NaN"]]}],
        },
    }

    result = _parse_matrix(body, thanos=True)

    (series,) = result.series
    assert series.labels == {"a": "1"}
    assert series.points[0] == (1_000_500, 1.0)
    assert series.points[1][0] == 1_060_500
    assert result.partial
    assert not _parse_matrix(body, thanos=False).partial
    with pytest.raises(QueryRejectedError, match="not a matrix"):
        _parse_matrix({"status": "success", "data": {"resultType": "vector"}}, thanos=False)
