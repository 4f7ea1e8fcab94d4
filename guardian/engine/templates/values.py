"""Run-time values of the template language, modelled on the Go types Prometheus uses.

Python ``str``, ``bool``, ``int``, ``float`` and ``None`` stand for Go ``string``, ``bool``,
``int``, ``float64`` and ``nil``. A plain ``dict`` is a ``map[string]string`` (alert labels); the
classes below stand for the remaining Go types a Prometheus template can meet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


class Missing:
    """Go's invalid ``reflect.Value``: printed as ``<no value>``."""

    _instance: Missing | None = None

    def __new__(cls) -> Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


class ArgsMap(dict[str, object]):
    """``map[string]interface {}`` as built by ``args``; a missing key gives ``<no value>``."""


class HTML(str):
    """``html/template.HTML`` as returned by ``safeHtml``."""

    __slots__ = ()


@dataclass(frozen=True)
class QuerySample:
    """One sample of a ``query`` result (Go ``*template.sample``)."""

    labels: Mapping[str, str]
    value: float


class QueryResult(list[QuerySample]):
    """A ``query`` result (Go ``template.queryResult``)."""


@dataclass(frozen=True)
class GoTime:
    """A UTC ``*time.Time`` (from ``toTime``), kept as nanoseconds since the epoch."""

    unix_nanos: int


@dataclass(frozen=True)
class TemplateData:
    """The data (``.``) of an alert template: Prometheus's ``AlertTemplateData``."""

    labels: Mapping[str, str]
    external_labels: Mapping[str, str]
    external_url: str
    value: float


DATA_TYPE_NAME = (
    "struct { Labels map[string]string; ExternalLabels map[string]string; "
    "ExternalURL string; Value float64 }"
)


def go_type_name(value: object) -> str:
    """The Go type name used in error messages and ``%T``-like diagnostics."""
    if value is None or value is MISSING:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, complex):
        return "complex128"
    if isinstance(value, HTML):
        return "template.HTML"
    if isinstance(value, str):
        return "string"
    if isinstance(value, ArgsMap):
        return "map[string]interface {}"
    if isinstance(value, dict):
        return "map[string]string"
    if isinstance(value, QueryResult):
        return "template.queryResult"
    if isinstance(value, QuerySample):
        return "*template.sample"
    if isinstance(value, GoTime):
        return "*time.Time"
    if isinstance(value, TemplateData):
        return DATA_TYPE_NAME
    if isinstance(value, list):
        return "[]interface {}"
    return type(value).__name__


def is_true(value: object) -> bool:
    """Go template truth: the zero value of its type is false (``text/template`` ``isTrue``)."""
    if value is None or value is MISSING:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, float):
        # NaN != 0, so NaN is true as in Go.
        return math.isnan(value) or value != 0
    if isinstance(value, complex):
        return value != 0
    if isinstance(value, str | dict | list):
        return len(value) > 0
    # Pointers (sample, time) and structs are always true.
    return True
