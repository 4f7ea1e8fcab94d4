"""The adapter's matrix answers, as the replay reads them."""

from __future__ import annotations

from typing import Any

import pytest

from guardian.adapters.prometheus import QueryRejectedError, _parse_matrix


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
    assert series.samples[0] == (1_000_500, 1.0)
    assert series.samples[1][0] == 1_060_500
    assert result.partial
    assert not _parse_matrix(body, thanos=False).partial
    with pytest.raises(QueryRejectedError, match="not a matrix"):
        _parse_matrix({"status": "success", "data": {"resultType": "vector"}}, thanos=False)
