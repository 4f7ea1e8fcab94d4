"""The demo profile: the shipped rule pack with every duration divided by a factor.

A 30-minute idle window cannot fill in a two-minute demo, so the demo runs the
real rule files with their time scale compressed (factor 60: ``for: 5m`` → ``5s``,
``[30m]`` → ``[30s]``, ``offset 30m`` → ``offset 30s``, ``[1h:2m]`` → ``[60s:2s]``).
Only durations change: ``for``, ``keep_firing_for``, group ``interval``, range and
subquery windows and ``offset`` in expressions (never inside string literals or
comments), and duration words in annotation text outside template actions.

Thresholds that are seconds rather than durations (``time() - last_success > 120``)
are listed in :data:`SECONDS_THRESHOLDS` and scaled too, but never below
``min_threshold_seconds``: data freshness cannot be compressed below a few scrape
and collection intervals. A listed threshold missing from its rule is an error, so
the profile cannot silently drift from the pack. See docs/demo.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from guardian.engine.rules.loader import parse_rule_file
from guardian_common.durations import format_duration, parse_duration_ms
from guardian_common.errors import ConfigError

_DUR = r"(?:\d+(?:ms|s|m|h|d|w|y))+"
# A range or subquery: [30m], [30m:1m], [1h:]. Whitespace as PromQL allows it.
_RANGE = re.compile(rf"\[\s*({_DUR})\s*(?:(:)\s*({_DUR})?\s*)?\]")
_OFFSET = re.compile(rf"\b(offset\s+)(-?)({_DUR})\b")
# String literals and comments in PromQL: durations inside them are not durations.
_OPAQUE = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`|#[^\n]*')
_TEMPLATE_ACTION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_WORD_DURATION = re.compile(rf"\b({_DUR})\b")

# The ``window`` label of the exporter's peak series names a duration inside a string.
_WINDOW_LABEL = re.compile(rf'\bwindow(\s*=\s*)"({_DUR})"')

# rule (its alert name, and ``{reason=...}`` for a rule with a `reason` label) -> the
# comparisons whose right-hand side is a number of seconds.
_IDLE_WINDOW = (">= 1800", "< 1800")  # the 30m window, against the exporter's fact times
SECONDS_THRESHOLDS: Mapping[str, tuple[str, ...]] = {
    "GpuExporterStale": ("> 120",),
    "PrometheusRemoteWriteBehind": ("> 120",),
    "GpuIdle": _IDLE_WINDOW,
    "GpuActivityUnknown{reason=no_activity_metric}": _IDLE_WINDOW,
    "GpuShareIdle": _IDLE_WINDOW,
}


@dataclass(frozen=True)
class DemoProfile:
    """How the demo compresses time. ``factor`` divides every duration."""

    factor: int = 60
    min_threshold_seconds: int = 10

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise ValueError(f"factor must be >= 1, got {self.factor}")

    def duration(self, text: str) -> str:
        """``30m`` → ``30s`` at factor 60; sub-second results in ms; ``0`` stays ``0``."""
        ms = parse_duration_ms(text)
        if ms == 0:
            return text
        scaled = max(1, round(ms / self.factor))
        return f"{scaled // 1000}s" if scaled % 1000 == 0 else f"{scaled}ms"

    def seconds(self, value: float) -> float:
        return max(float(self.min_threshold_seconds), value / self.factor)

    def window_label(self, text: str) -> str:
        """A peak series' ``window`` label as the exporter spells the compressed window
        (``1h`` → ``1m``), so rules select what an exporter run with
        :meth:`exporter_windows` serves."""
        return format_duration(max(1, round(parse_duration_ms(text) / self.factor)) / 1000)

    def exporter_windows(self) -> list[str]:
        """The exporter's peak-window flags for the compressed pack (defaults 1h and 30m)."""
        return [
            "--memory-peak-window",
            self.window_label("1h"),
            "--activity-peak-window",
            self.window_label("30m"),
        ]


def _outside(text: str, pattern: re.Pattern[str], edit: Callable[[str], str]) -> str:
    """Apply ``edit`` to the stretches of ``text`` that ``pattern`` does not match."""
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(edit(text[last : match.start()]))
        out.append(match.group(0))
        last = match.end()
    out.append(edit(text[last:]))
    return "".join(out)


def compress_expr(expr: str, profile: DemoProfile) -> str:
    """Compress range, subquery and offset durations in a PromQL expression."""

    def code(segment: str) -> str:
        def ranged(m: re.Match[str]) -> str:
            step = "" if m.group(3) is None else profile.duration(m.group(3))
            colon = m.group(2) or ""
            return f"[{profile.duration(m.group(1))}{colon}{step}]"

        segment = _RANGE.sub(ranged, segment)
        return _OFFSET.sub(
            lambda m: m.group(1) + m.group(2) + profile.duration(m.group(3)), segment
        )

    expr = _WINDOW_LABEL.sub(
        lambda m: f'window{m.group(1)}"{profile.window_label(m.group(2))}"', expr
    )
    return _outside(expr, _OPAQUE, code)


def compress_text(text: str, profile: DemoProfile) -> str:
    """Duration words in annotation text, outside ``{{ ... }}`` template actions."""
    return _outside(
        text,
        _TEMPLATE_ACTION,
        lambda s: _WORD_DURATION.sub(lambda m: profile.duration(m.group(1)), s),
    )


def _threshold(expr: str, comparison: str, profile: DemoProfile, where: str) -> str:
    op, _, number = comparison.partition(" ")
    pattern = re.compile(rf"{re.escape(op)}\s*{re.escape(number)}(?![\d.])")
    if not pattern.search(expr):
        raise ConfigError(f"the demo profile expects {comparison!r} in this rule", path=where)
    scaled = profile.seconds(float(number))
    return pattern.sub(f"{op} {scaled:g}", expr)


def _rule_key(rule: Mapping[str, Any]) -> str:
    """``GpuShareIdle``, or ``GpuShareIdle{reason=no_process}`` for a rule with a reason."""
    labels = rule.get("labels")
    reason = labels.get("reason") if isinstance(labels, Mapping) else None
    alert = str(rule.get("alert", ""))
    return f"{alert}{{reason={reason}}}" if reason else alert


def compress_rule(rule: Mapping[str, Any], profile: DemoProfile, where: str) -> dict[str, Any]:
    out = dict(rule)
    for key in ("for", "keep_firing_for"):
        if isinstance(out.get(key), str):
            out[key] = profile.duration(out[key])
    if isinstance(out.get("expr"), str):
        expr = compress_expr(out["expr"], profile)
        for comparison in SECONDS_THRESHOLDS.get(_rule_key(out), ()):
            expr = _threshold(expr, comparison, profile, where)
        out["expr"] = expr
    if isinstance(out.get("annotations"), Mapping):
        out["annotations"] = {
            k: compress_text(v, profile) if isinstance(v, str) and k != "runbook_url" else v
            for k, v in out["annotations"].items()
        }
    return out


def compress_rule_file(text: str, source: str, profile: DemoProfile) -> str:
    """The rule file ``text`` with its durations compressed, as YAML."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or not isinstance(data.get("groups"), list):
        raise ConfigError("not a rule file (no groups list)", path=source)
    groups = []
    for group in data["groups"]:
        g = dict(group)
        if isinstance(g.get("interval"), str):
            g["interval"] = profile.duration(g["interval"])
        g["rules"] = [compress_rule(r, profile, source) for r in g.get("rules") or []]
        groups.append(g)
    header = (
        f"# Generated by the demo (`make demo`) from {source}: every duration divided by "
        f"{profile.factor} (see docs/demo.md). Do not edit.\n"
    )
    return header + yaml.dump({"groups": groups}, Dumper=_BlockDumper, sort_keys=False, width=100)


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (expressions) as ``|`` blocks, as the pack writes them."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def write_profile_rules(
    sources: Sequence[Path], target_dir: Path, profile: DemoProfile
) -> list[Path]:
    """Compress each rule file into ``target_dir`` and load it with the engine's loader
    (raises ConfigErrors naming file, line and field if the result is invalid)."""
    target_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        compressed = compress_rule_file(source.read_text(encoding="utf-8"), str(source), profile)
        path = target_dir / source.name
        path.write_text(compressed, encoding="utf-8")
        parse_rule_file(compressed, str(path))
        written.append(path)
    return written
