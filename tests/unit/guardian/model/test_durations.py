from __future__ import annotations

import pytest

from guardian_common.durations import (
    DurationRangeError,
    format_duration,
    parse_duration,
    parse_duration_ms,
)


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("0", 0),
        ("0s", 0),
        ("90s", 90_000),
        ("1h30m", 5_400_000),
        ("1d", 86_400_000),
        ("1w", 604_800_000),
        ("1y", 31_536_000_000),
        ("250ms", 250),
        ("1m30s500ms", 90_500),
    ],
)
def test_parse(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms
    assert parse_duration(text) == ms / 1000


@pytest.mark.parametrize("text", ["", "1.5h", "5", "1h 30m", "30m1h", "-5m", "5M", "1hr"])
def test_reject(text: str) -> None:
    with pytest.raises(ValueError, match="not a valid duration string"):
        parse_duration_ms(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.5, "500ms"),
        (1.25, "1s250ms"),
        (45, "45s"),
        (90, "1m30s"),
        (600, "10m"),
        (3600, "1h"),
        (5400, "1h30m"),
        (7200, "2h"),
        (86400, "1d"),
        (93600, "1d2h"),
        (604800, "1w"),
        (31_536_000, "1y"),
    ],
)
def test_format(seconds: float, text: str) -> None:
    """As people write durations (policies check prints ``2h``, not ``7200s``)."""
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["99999999999999999y", "293y", "9" * 30 + "ms", "107000000d"])
def test_longer_than_prometheus_allows_is_out_of_range(text: str) -> None:
    # Prometheus keeps durations as int64 nanoseconds (about 292y) and refuses longer ones.
    with pytest.raises(DurationRangeError, match="duration out of range"):
        parse_duration_ms(text)


def test_the_longest_duration_prometheus_allows() -> None:
    assert parse_duration_ms("292y") == 292 * 31_536_000_000
