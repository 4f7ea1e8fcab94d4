"""A promtool rule unit-test file (``promtool test rules``, Prometheus 2.42), validated.

Unknown fields are errors (promtool decodes strictly); every finding names the file, the
line and the field. Series notation is expanded here, so a bad ``values`` string is
reported at load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from guardian.engine.promtest.notation import (
    MAX_SAMPLES,
    STALE,
    NotationError,
    Point,
    Stale,
    parse_metric,
    parse_values,
)
from guardian_common.durations import format_duration, parse_duration_ms
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.yamldoc import MergeOrder, Path, YamlDocument, mapping_pairs, parse_yaml

DEFAULT_EVALUATION_INTERVAL_MS = 60_000
MAX_EVAL_STEPS = 1_000_000
"""Evaluations of one test group: two years at the default 1m interval."""
# promtool decodes test files with yaml.v2: with merge keys, what comes later wins.
MERGE_ORDER: MergeOrder = "document"


@dataclass(frozen=True)
class InputSeries:
    labels: Mapping[str, str]
    points: tuple[Point, ...]
    line: int = 0

    def loaded(self, interval_ms: int) -> list[tuple[int, float | Stale]]:
        """(timestamp ms, value) of each sample promtool 2.42 stores for this series.

        With an ``interval`` of 0 every value lands at 0s and the database keeps the
        first one (it drops later samples at the same timestamp).
        """
        points = [(i * interval_ms, p) for i, p in enumerate(self.points) if p is not None]
        return points[:1] if interval_ms == 0 else points


@dataclass(frozen=True)
class ExpectedAlert:
    labels: Mapping[str, str]
    annotations: Mapping[str, str]


@dataclass(frozen=True)
class AlertTestCase:
    eval_time_ms: int
    alertname: str
    exp_alerts: tuple[ExpectedAlert, ...]
    line: int = 0


@dataclass(frozen=True)
class ExpectedSample:
    labels: str  # as written: parsed at comparison time, where promtool reports errors
    value: float


@dataclass(frozen=True)
class PromqlTestCase:
    expr: str
    eval_time_ms: int
    exp_samples: tuple[ExpectedSample, ...]
    line: int = 0


@dataclass(frozen=True)
class TestGroup:
    name: str
    interval_ms: int
    input_series: tuple[InputSeries, ...]
    alert_tests: tuple[AlertTestCase, ...]
    promql_tests: tuple[PromqlTestCase, ...]
    external_labels: Mapping[str, str] = field(default_factory=dict)
    external_url: str = ""
    line: int = 0

    @property
    def max_eval_time_ms(self) -> int:
        times = [t.eval_time_ms for t in self.alert_tests]
        times += [t.eval_time_ms for t in self.promql_tests]
        return max(times, default=0)

    @property
    def uses_stale(self) -> bool:
        return any(
            point is STALE for s in self.input_series for _, point in s.loaded(self.interval_ms)
        )


@dataclass(frozen=True)
class UnitTestFile:
    path: str
    rule_files: tuple[str, ...]
    evaluation_interval_ms: int
    group_eval_order: tuple[str, ...]
    tests: tuple[TestGroup, ...]


def _plain_scalars(node: yaml.Node | None, path: Path, out: dict[Path, str]) -> dict[Path, str]:
    """The source text of every unquoted scalar (values, and mapping keys under
    ``(*path, key, _KEY)``), by the path the parsed document uses.

    promtool's YAML decoder gives a string field the scalar's text, while YAML 1.1
    resolution would turn ``values: 0x70`` into the integer 112 and ``on: yes`` into
    ``True: True``.
    """
    if isinstance(node, yaml.MappingNode):
        for key_node, value in mapping_pairs(node, order=MERGE_ORDER):
            key = str(_SCALARS.construct_object(key_node))  # as yamldoc names the path
            if isinstance(key_node, yaml.ScalarNode) and key_node.style is None:
                out[(*path, key, _KEY)] = key_node.value
            _plain_scalars(value, (*path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _plain_scalars(item, (*path, index), out)
    elif isinstance(node, yaml.ScalarNode) and node.style is None:
        out[path] = node.value
    return out


_SCALARS = yaml.SafeLoader("")
_KEY = "<key text>"


class _Reader:
    def __init__(self, doc: YamlDocument, raw: dict[Path, str]) -> None:
        self.doc = doc
        self.raw = raw
        self.errors: list[ConfigError] = []
        self.samples_left = MAX_SAMPLES  # of the input series of the group being read

    def fail(self, message: str, path: Path) -> None:
        self.errors.append(self.doc.error(message, path))

    def mapping(self, value: Any, path: Path, allowed: set[str], what: str) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(f"{what} must be a mapping", path)
            return {}
        for key in value:
            if key not in allowed:
                self.fail(f"field {key} not found in {what}", (*path, key))
        return value

    def items(self, value: Any, path: Path) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail("must be a list", path)
            return []
        return value

    def text(self, value: Any, path: Path, *, required: bool = False) -> str:
        if value is None:
            if required:
                self.fail("field is required", path)
            return ""
        if isinstance(value, (dict, list)):
            self.fail("must be a string", path)
            return ""
        return self.raw.get(path, str(value))

    def duration_ms(self, value: Any, path: Path, default: int | None = None) -> int:
        if value is None:
            if default is None:
                self.fail("field is required", path)
                return 0
            return default
        if value == 0 and not isinstance(value, bool):
            return 0
        try:
            return parse_duration_ms(str(value))
        except ValueError as exc:
            self.fail(str(exc), path)
            return default or 0  # reported once: not again as "must be greater than 0"

    def string_map(self, value: Any, path: Path) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail("must be a mapping of names to strings", path)
            return {}
        for key in value:
            if (*path, key) in self.doc.merge_conflicts:
                # yaml.v2's strict decoding refuses a map key set twice, merged or not.
                self.fail(f"key {key!r} already set in map (through a merge key)", (*path, key))
        # Keys keep their text too: `on: yes` is the label "on", not "True".
        return {
            self.raw.get((*path, k, _KEY), str(k)): self.text(v, (*path, k))
            for k, v in value.items()
        }

    def line(self, path: Path) -> int:
        return self.doc.line(path) or 0


def _series(reader: _Reader, raw: Any, path: Path) -> InputSeries | None:
    data = reader.mapping(raw, path, {"series", "values"}, "series")
    text = reader.text(data.get("series"), (*path, "series"), required=True)
    try:
        # An empty label value is the same as no label in the database.
        labels = {k: v for k, v in parse_metric(text).items() if v} if text else {}
        values = reader.text(data.get("values"), (*path, "values"))
        points = tuple(parse_values(values, reader.samples_left))
    except NotationError as exc:
        reader.fail(str(exc), path)
        return None
    reader.samples_left -= len(points)
    return InputSeries(labels, points, reader.line(path)) if text else None


def _alert_test(reader: _Reader, raw: Any, path: Path) -> AlertTestCase:
    data = reader.mapping(raw, path, {"eval_time", "alertname", "exp_alerts"}, "alertTestCase")
    expected: list[ExpectedAlert] = []
    for i, item in enumerate(reader.items(data.get("exp_alerts"), (*path, "exp_alerts"))):
        item_path = (*path, "exp_alerts", i)
        alert = reader.mapping(item, item_path, {"exp_labels", "exp_annotations"}, "alert")
        expected.append(
            ExpectedAlert(
                reader.string_map(alert.get("exp_labels"), (*item_path, "exp_labels")),
                reader.string_map(alert.get("exp_annotations"), (*item_path, "exp_annotations")),
            )
        )
    return AlertTestCase(
        eval_time_ms=reader.duration_ms(data.get("eval_time"), (*path, "eval_time"), 0),
        alertname=reader.text(data.get("alertname"), (*path, "alertname"), required=True),
        exp_alerts=tuple(expected),
        line=reader.line(path),
    )


def _sample_value(reader: _Reader, value: Any, path: Path) -> float:
    if value is None:
        return 0.0  # an omitted value decodes as Go's zero float64
    if isinstance(value, bool):
        reader.fail("value must be a number", path)
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        reader.fail(f"value must be a number, got {value!r}", path)
        return 0.0


def _promql_test(reader: _Reader, raw: Any, path: Path) -> PromqlTestCase:
    data = reader.mapping(raw, path, {"expr", "eval_time", "exp_samples"}, "promqlTestCase")
    samples: list[ExpectedSample] = []
    for i, item in enumerate(reader.items(data.get("exp_samples"), (*path, "exp_samples"))):
        item_path = (*path, "exp_samples", i)
        sample = reader.mapping(item, item_path, {"labels", "value"}, "sample")
        samples.append(
            ExpectedSample(
                reader.text(sample.get("labels"), (*item_path, "labels")),
                _sample_value(reader, sample.get("value"), (*item_path, "value")),
            )
        )
    return PromqlTestCase(
        expr=reader.text(data.get("expr"), (*path, "expr"), required=True),
        eval_time_ms=reader.duration_ms(data.get("eval_time"), (*path, "eval_time"), 0),
        exp_samples=tuple(samples),
        line=reader.line(path),
    )


_GROUP_FIELDS = {
    "name",
    "interval",
    "input_series",
    "alert_rule_test",
    "promql_expr_test",
    "external_labels",
    "external_url",
}


def _last_definitions(series: list[InputSeries | None]) -> tuple[InputSeries, ...]:
    """One series per label set: promtool keys input series by labels, the last wins."""
    by_labels: dict[tuple[tuple[str, str], ...], InputSeries] = {}
    for item in series:
        if item is not None:
            key = tuple(sorted(item.labels.items()))
            by_labels.pop(key, None)
            by_labels[key] = item
    return tuple(by_labels.values())


def _group(reader: _Reader, raw: Any, path: Path) -> TestGroup:
    data = reader.mapping(raw, path, _GROUP_FIELDS, "testGroup")
    # promtool 2.42 does not default `interval` (2.49 defaults it to evaluation_interval):
    # omitted, it is 0 and every input series loads as one sample at 0s.
    interval = reader.duration_ms(data.get("interval"), (*path, "interval"), 0)
    reader.samples_left = MAX_SAMPLES
    series = [
        _series(reader, item, (*path, "input_series", i))
        for i, item in enumerate(reader.items(data.get("input_series"), (*path, "input_series")))
    ]
    alert_path = (*path, "alert_rule_test")
    promql_path = (*path, "promql_expr_test")
    return TestGroup(
        name=reader.text(data.get("name"), (*path, "name")),
        interval_ms=interval,
        input_series=_last_definitions(series),
        alert_tests=tuple(
            _alert_test(reader, item, (*alert_path, i))
            for i, item in enumerate(reader.items(data.get("alert_rule_test"), alert_path))
        ),
        promql_tests=tuple(
            _promql_test(reader, item, (*promql_path, i))
            for i, item in enumerate(reader.items(data.get("promql_expr_test"), promql_path))
        ),
        external_labels=reader.string_map(data.get("external_labels"), (*path, "external_labels")),
        external_url=reader.text(data.get("external_url"), (*path, "external_url")),
        line=reader.line(path),
    )


def parse_test_file(text: str, source: str) -> UnitTestFile:
    """Validate a promtool test file. Raises ConfigErrors with every finding."""
    try:
        doc = parse_yaml(text, source, MERGE_ORDER)
    except ConfigError as exc:
        raise ConfigErrors([exc]) from exc
    reader = _Reader(doc, _plain_scalars(doc.node, (), {}))
    top = reader.mapping(
        doc.data,
        (),
        {"rule_files", "evaluation_interval", "group_eval_order", "tests"},
        "unitTestFile",
    )
    interval = reader.duration_ms(
        top.get("evaluation_interval"), ("evaluation_interval",), DEFAULT_EVALUATION_INTERVAL_MS
    )
    if interval == 0:
        interval = DEFAULT_EVALUATION_INTERVAL_MS  # promtool: 0 means the default too
    rule_files = [
        reader.text(f, ("rule_files", i), required=True)
        for i, f in enumerate(reader.items(top.get("rule_files"), ("rule_files",)))
    ]
    order = [
        reader.text(g, ("group_eval_order", i), required=True)
        for i, g in enumerate(reader.items(top.get("group_eval_order"), ("group_eval_order",)))
    ]
    if len(set(order)) != len(order):
        repeated = sorted({g for g in order if order.count(g) > 1})
        reader.fail(
            f"group name repeated in evaluation order: {', '.join(repeated)}",
            ("group_eval_order",),
        )
    tests = tuple(
        _group(reader, item, ("tests", i))
        for i, item in enumerate(reader.items(top.get("tests"), ("tests",)))
    )
    for i, group in enumerate(tests):
        _check_steps(reader, group, interval, ("tests", i))
    if reader.errors:
        raise ConfigErrors(reader.errors)
    return UnitTestFile(source, tuple(rule_files), interval, tuple(order), tests)


def _check_steps(reader: _Reader, group: TestGroup, interval_ms: int, path: Path) -> None:
    """A group is evaluated every ``evaluation_interval`` up to its last ``eval_time``:
    at most MAX_EVAL_STEPS times, so a typo cannot start years of evaluations."""
    steps = group.max_eval_time_ms // interval_ms + 1
    if steps > MAX_EVAL_STEPS:
        reader.fail(
            f"an eval_time of {format_duration(group.max_eval_time_ms / 1000)} at an "
            f"evaluation_interval of {format_duration(interval_ms / 1000)} needs {steps} "
            f"evaluations; at most {MAX_EVAL_STEPS} are allowed",
            path,
        )
