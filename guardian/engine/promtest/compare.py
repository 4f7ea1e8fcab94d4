"""The evaluation schedule of a test group and promtool's comparisons and messages.

As ``cmd/promtool/unittest.go`` (2.42): every group is evaluated at each
``evaluation_interval`` step from 0 to the group's largest ``eval_time``; an
``alert_rule_test`` is checked against the step ``ts`` with
``ts <= eval_time < ts + evaluation_interval``; only firing alerts count, from every
rule with that alert name; ``promql_expr_test`` results are compared as sorted
(labels, value) lists with exact float equality (so an expected NaN never matches).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from guardian.engine.golang.strconv import go_quote
from guardian.engine.promtest.model import AlertTestCase, PromqlTestCase
from guardian.engine.promtest.notation import NotationError, parse_metric
from guardian_common.durations import format_duration

LabelItems = tuple[tuple[str, str], ...]


def eval_steps(max_eval_time_ms: int, interval_ms: int) -> list[int]:
    """Evaluation timestamps in ms: 0, interval, ... up to and including the largest
    ``eval_time`` (which need not be a multiple of the interval)."""
    return list(range(0, max_eval_time_ms + 1, interval_ms))


def alert_tests_at(
    step_ms: int, interval_ms: int, cases: Iterable[AlertTestCase]
) -> list[AlertTestCase]:
    return [c for c in cases if step_ms <= c.eval_time_ms < step_ms + interval_ms]


def go_duration(ms: int) -> str:
    """``model.Duration.String()``: ``5m``, ``1h30m``, ``0s``."""
    return format_duration(ms / 1000)


def go_time_duration(ms: int) -> str:
    """``time.Duration.String()`` for whole milliseconds: ``0s``, ``1.5s``, ``1h0m0s``."""
    if ms == 0:
        return "0s"
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    if ms < 1000:
        return f"{sign}{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}" + (f".{rest % 1000:03d}".rstrip("0") if rest % 1000 else "")
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{sign}{minutes}m{seconds}s"
    return f"{sign}{seconds}s"


def labels_string(labels: Mapping[str, str] | LabelItems) -> str:
    """``labels.Labels.String()``: ``{a="1", b="2"}``, sorted by name."""
    items = sorted(labels.items()) if isinstance(labels, Mapping) else sorted(labels)
    return "{" + ", ".join(f"{k}={go_quote(v)}" for k, v in items) + "}"


def format_float_e(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'E', -1, 64)``: ``1E+00``, ``1.5E+02``, ``+Inf``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    for digits in range(17):
        text = f"{value:.{digits}E}"
        if float(text) == value:
            return text
    return f"{value:.16E}"


def _indent(text: str, prefix: str) -> str:
    return text.replace("\n", "\n" + prefix)


@dataclass(frozen=True)
class AlertSeen:
    labels: LabelItems
    annotations: LabelItems

    def __str__(self) -> str:
        return f"Labels:{labels_string(self.labels)}\nAnnotations:{labels_string(self.annotations)}"


def _alerts_string(alerts: Sequence[AlertSeen]) -> str:
    if not alerts:
        return "[]"
    parts = [f"{i}:" + _indent("\n" + str(a), "  ") for i, a in enumerate(alerts)]
    return "[\n" + ",\n".join(parts) + "\n]"


def _name_line(test_name: str) -> str:
    return f"    name: {test_name},\n" if test_name else ""


def compare_alerts(test_name: str, case: AlertTestCase, firing: Iterable[AlertSeen]) -> str | None:
    """None when the firing alerts are exactly those expected, else promtool's message."""
    expected = sorted(
        (
            AlertSeen(
                tuple(sorted({**a.labels, "alertname": case.alertname}.items())),
                tuple(sorted(a.annotations.items())),
            )
            for a in case.exp_alerts
        ),
        key=lambda a: (a.labels, a.annotations),
    )
    got = sorted(firing, key=lambda a: (a.labels, a.annotations))
    if expected == got:
        return None
    exp_text = _indent(_alerts_string(expected), "            ")
    got_text = _indent(_alerts_string(got), "            ")
    return (
        f"{_name_line(test_name)}    alertname: {case.alertname}, "
        f"time: {go_duration(case.eval_time_ms)}, \n"
        f"        exp:{exp_text}, \n        got:{got_text}"
    )


def _samples_string(samples: Sequence[tuple[LabelItems, float]]) -> str:
    if not samples:
        return "nil"
    return ", ".join(f"{labels_string(lbls)} {format_float_e(v)}" for lbls, v in samples)


def _same_samples(
    expected: Sequence[tuple[LabelItems, float]], got: Sequence[tuple[LabelItems, float]]
) -> bool:
    # Exact float equality, as reflect.DeepEqual: NaN never equals NaN.
    return len(expected) == len(got) and all(
        e_labels == g_labels and e_value == g_value
        for (e_labels, e_value), (g_labels, g_value) in zip(expected, got, strict=True)
    )


def compare_samples(
    test_name: str, case: PromqlTestCase, got: Iterable[tuple[Mapping[str, str], float]]
) -> str | None:
    """None when the query returned exactly the expected samples, else promtool's message."""
    del test_name  # promtool 2.42 does not name the test group in PromQL failures
    head = f"    expr: {go_quote(case.expr)}, time: {go_duration(case.eval_time_ms)}"
    expected: list[tuple[LabelItems, float]] = []
    for sample in case.exp_samples:
        try:
            # ParseMetric: an omitted or blank description is the empty label set.
            labels = parse_metric(sample.labels) if sample.labels.strip() else {}
        except NotationError as exc:
            return f"{head}, err: labels {go_quote(sample.labels)}: {exc}"
        expected.append((tuple(sorted(labels.items())), sample.value))
    expected.sort(key=lambda s: s[0])
    actual = sorted(((tuple(sorted(lbls.items())), v) for lbls, v in got), key=lambda s: s[0])
    if _same_samples(expected, actual):
        return None
    return (
        f"{head},\n        exp: {_samples_string(expected)}\n        got: {_samples_string(actual)}"
    )
