"""Run-time values of the template language, modelled on the Go types Prometheus uses.

Python ``str``, ``bool``, ``int``, ``float`` and ``None`` stand for Go ``string``, ``bool``,
``int``, ``float64`` and ``nil``. A plain ``dict`` is a ``map[string]string`` (alert labels); the
classes below stand for the remaining Go types a Prometheus template can meet, with
``*time.Time`` from :mod:`guardian.engine.golang.time` (:mod:`~guardian.engine.golang.reflect`
says how the Go types of Python values are named and printed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from guardian.engine.golang.fmt import format_v
from guardian.engine.golang.reflect import GoValue, Nil, Struct
from guardian.engine.golang.strconv import format_go_value


class Missing(Nil):
    """Go's invalid ``reflect.Value``: printed as ``<no value>`` by an action, ``<nil>`` by
    ``fmt``."""

    _instance: Missing | None = None

    def __new__(cls) -> Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()


class ArgsMap(dict[str, object], GoValue):
    """``map[string]interface {}`` as built by ``args``; a missing key gives ``<no value>``."""

    def go_type(self) -> str:
        return "map[string]interface {}"


class HTML(str, GoValue):
    """``html/template.HTML`` as returned by ``safeHtml``."""

    __slots__ = ()

    def go_type(self) -> str:
        return "template.HTML"


@dataclass(frozen=True)
class QuerySample(Struct):
    """One sample of a ``query`` result (Go ``*template.sample``)."""

    pointer = True
    labels: Mapping[str, str]
    value: float

    def go_type(self) -> str:
        return "*template.sample"

    def go_fields(self) -> tuple[object, ...]:
        return dict(self.labels), self.value


class QueryResult(list[QuerySample], GoValue):
    """A ``query`` result (Go ``template.queryResult``)."""

    def go_type(self) -> str:
        return "template.queryResult"


DATA_TYPE_NAME = (
    "struct { Labels map[string]string; ExternalLabels map[string]string; "
    "ExternalURL string; Value float64 }"
)


@dataclass(frozen=True)
class TemplateData(Struct):
    """The data (``.``) of an alert template: Prometheus's ``AlertTemplateData``."""

    labels: Mapping[str, str]
    external_labels: Mapping[str, str]
    external_url: str
    value: float

    def go_type(self) -> str:
        return DATA_TYPE_NAME

    def go_fields(self) -> tuple[object, ...]:
        return dict(self.labels), dict(self.external_labels), self.external_url, self.value


def print_value(value: object) -> str:
    """How an action prints its result (``text/template`` ``printValue``)."""
    if value is MISSING:
        return "<no value>"
    if isinstance(value, QuerySample):
        return format_v(value)[1:]  # the template indirects the pointer
    if isinstance(value, float) and math.isfinite(value):
        return format_go_value(value)
    return format_v(value)


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
