"""Kubernetes quantities, read as apimachinery's resource.Quantity reads them."""

from __future__ import annotations

from fractions import Fraction

import pytest

from guardian.engine.remediation.quantity import amount, parse_quantity, show

PARSED = [
    ("500m", Fraction(1, 2)),
    ("2", Fraction(2)),
    ("0.5", Fraction(1, 2)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("+3", Fraction(3)),
    ("1Ki", Fraction(1024)),
    ("1Gi", Fraction(1024**3)),
    ("512Mi", Fraction(512 * 1024**2)),
    ("1.5Gi", Fraction(3 * 1024**3, 2)),
    ("1e9", Fraction(10**9)),
    ("1E3", Fraction(1000)),  # an exponent, not exa
    ("1e-3", Fraction(1, 1000)),
    ("128974848", Fraction(128974848)),
    ("129M", Fraction(129 * 10**6)),
    ("1k", Fraction(1000)),
    ("1E", Fraction(10**18)),  # exa
    ("1Ei", Fraction(2**60)),
    (2, Fraction(2)),  # an unquoted JSON number
    ("-1", Fraction(-1)),
]

INVALID = ["", "Gi", "1 Gi", "1gi", "1e", "e3", "1.5.5", "abc", "1Kb", ".", None, True, [1]]


@pytest.mark.parametrize(("text", "value"), PARSED, ids=[str(t) for t, _ in PARSED])
def test_parse(text: object, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", INVALID, ids=[repr(t) for t in INVALID])
def test_not_a_quantity(text: object) -> None:
    assert parse_quantity(text) is None


AMOUNTS = [
    ("cpu", "500m", 500),
    ("cpu", "2", 2000),
    ("cpu", "0.1", 100),
    ("cpu", "1.0001m", 2),  # MilliValue rounds up
    ("memory", "1Gi", 1024**3),
    ("memory", "1e9", 10**9),
    ("memory", "129M", 129_000_000),
    ("memory", "0.5", 1),  # Value rounds up
    ("nvidia.com/gpu", "4", 4),
    ("memory", "-1", None),
    ("cpu", "lots", None),
]


@pytest.mark.parametrize(("resource", "text", "value"), AMOUNTS)
def test_amount_as_the_scheduler_counts(resource: str, text: str, value: int | None) -> None:
    assert amount(resource, text) == value


def test_show() -> None:
    assert show("cpu", 500) == "500m"
    assert show("cpu", 2000) == "2"
    assert show("memory", 4 * 1024**3) == "4Gi"
    assert show("memory", 129_000_000) == "129000000"
    assert show("nvidia.com/gpu", 2) == "2"
