"""Load Prometheus rule files: validate everything at load, with file, line and field.

The checks are those of Prometheus 2.42's ``rulefmt`` (unknown fields, durations, label
and annotation names, PromQL and template parse errors, duplicate group names, recording
rules with ``for``/``keep_firing_for``/``annotations``), all collected so one run reports
them all.
Text in, model out: reading files is the caller's job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from guardian.engine.promql import PromQLError, parse_expr
from guardian.engine.templates import TemplateParseError, parse_template
from guardian.model.labels import is_valid_label_name, is_valid_metric_name
from guardian.model.rules import AlertingRule, RecordingRule, Rule, RuleFile, RuleGroup
from guardian_common.durations import parse_duration
from guardian_common.errors import ConfigError, ConfigErrors
from guardian_common.yamldoc import Path, YamlDocument, parse_yaml

_FILE_FIELDS = frozenset({"groups"})
_GROUP_FIELDS = frozenset({"name", "interval", "limit", "rules"})
_RULE_FIELDS = frozenset(
    {"record", "alert", "expr", "for", "keep_firing_for", "labels", "annotations"}
)
_NEWER_FIELDS = {
    "query_offset": "Prometheus 2.53",
    "labels": "Prometheus 3.0",
    "partial_response_strategy": "Thanos Ruler only",
}


class _Checker:
    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc
        self.errors: list[ConfigError] = []

    def fail(self, message: str, path: Path) -> None:
        self.errors.append(self.doc.error(message, path))

    def mapping(self, value: Any, path: Path, allowed: frozenset[str], what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(f"{what} must be a mapping, got {_kind(value)}", path)
            return {}
        for key in value:
            if key not in allowed:
                hint = _NEWER_FIELDS.get(key)
                extra = f" (needs {hint}; the rule packs target 2.42)" if hint else ""
                self.fail(f"field {key} not found in {what}{extra}", (*path, key))
        return value

    def string(self, value: Any, path: Path, *, required: bool = False) -> str | None:
        if value is None:
            if required:
                self.fail("field is required", path)
            return None
        if isinstance(value, (dict, list)):
            self.fail(f"must be a string, got {_kind(value)}", path)
            return None
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if required and not text.strip():
            self.fail("must not be empty", path)
        return text

    def duration(self, value: Any, path: Path) -> float | None:
        """Seconds, 0 when unset, None (and a finding) when invalid."""
        if value is None:
            return 0.0
        if value == 0 and not isinstance(value, bool):
            return 0.0
        if not isinstance(value, str):
            self.fail(f"not a valid duration string: {value!r} (add a unit, e.g. 90s)", path)
            return None
        try:
            return parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), path)
            return None

    def string_map(
        self, value: Any, path: Path, what: str, check_value: Callable[[str, Path], None]
    ) -> dict[str, str]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(f"{what} must be a mapping, got {_kind(value)}", path)
            return {}
        out: dict[str, str] = {}
        for name, raw in value.items():
            item_path = (*path, name)
            if not is_valid_label_name(name):
                self.fail(f"invalid {what[:-1]} name: {name!r}", item_path)
            elif what == "labels" and name == "__name__":
                self.fail("invalid label name: __name__ is reserved", item_path)
            text = self.string(raw, item_path)
            if text is None:
                text = ""
            check_value(text, item_path)
            out[name] = text
        return out

    def promql(self, text: str, path: Path) -> None:
        if not text.strip():
            return  # reported as empty already
        try:
            parse_expr(text)
        except PromQLError as exc:
            self.fail(f"could not parse expression: {exc}", path)

    def template(self, text: str, path: Path) -> None:
        if "{{" not in text:
            return
        try:
            parse_template(text, name=".".join(str(p) for p in path[-2:]))
        except TemplateParseError as exc:
            self.fail(f"template parse error: {exc}", path)


def _no_check(_text: str, _path: Path) -> None:
    return None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _rule(checker: _Checker, raw: Any, path: Path) -> Rule | None:
    data = checker.mapping(raw, path, _RULE_FIELDS, "rule")
    if not data and not isinstance(raw, dict):
        return None
    line = checker.doc.line(path) or 0
    alert = checker.string(data.get("alert"), (*path, "alert"))
    record = checker.string(data.get("record"), (*path, "record"))
    expr = checker.string(data.get("expr"), (*path, "expr"), required=True) or ""
    checker.promql(expr, (*path, "expr"))
    if alert is not None and record is not None:
        checker.fail("only one of 'record' and 'alert' must be set", path)
        return None
    if alert is None and record is None:
        checker.fail("one of 'record' or 'alert' must be set", path)
        return None
    # Prometheus expands label templates of alerting rules only.
    check_label = checker.template if record is None else _no_check
    labels = checker.string_map(data.get("labels"), (*path, "labels"), "labels", check_label)
    if record is not None:
        if not is_valid_metric_name(record):
            checker.fail(f"invalid recording rule name: {record!r}", (*path, "record"))
        for field_name in ("for", "keep_firing_for", "annotations"):
            if field_name in data:
                checker.fail(f"invalid field '{field_name}' in recording rule", (*path, field_name))
        return RecordingRule(name=record, expr=expr, labels=labels, line=line)
    if alert is None or not alert.strip():
        checker.fail("must not be empty", (*path, "alert"))
    annotations = checker.string_map(
        data.get("annotations"), (*path, "annotations"), "annotations", checker.template
    )
    return AlertingRule(
        name=alert or "",
        expr=expr,
        for_seconds=checker.duration(data.get("for"), (*path, "for")) or 0.0,
        keep_firing_for_seconds=checker.duration(
            data.get("keep_firing_for"), (*path, "keep_firing_for")
        )
        or 0.0,
        labels=labels,
        annotations=annotations,
        line=line,
    )


def _group(checker: _Checker, raw: Any, path: Path, seen: dict[str, int]) -> RuleGroup | None:
    data = checker.mapping(raw, path, _GROUP_FIELDS, "rule group")
    if not isinstance(raw, dict):
        return None
    name = checker.string(data.get("name"), (*path, "name"), required=True) or ""
    if name:
        if name in seen:
            checker.fail(
                f"groupname: {name!r} is repeated in the same file (first at line {seen[name]})",
                (*path, "name"),
            )
        else:
            seen[name] = checker.doc.line((*path, "name")) or 0
    interval: float | None = None
    if data.get("interval") is not None:
        interval = checker.duration(data["interval"], (*path, "interval"))
        if interval == 0:
            checker.fail("interval must be greater than 0", (*path, "interval"))
            interval = None
    limit = data.get("limit", 0)
    if limit is None:
        limit = 0
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        checker.fail(f"limit must be a non-negative integer, got {limit!r}", (*path, "limit"))
        limit = 0
    raw_rules = data.get("rules") or []
    rules: list[Rule] = []
    if not isinstance(raw_rules, list):
        checker.fail(f"rules must be a list, got {_kind(raw_rules)}", (*path, "rules"))
    else:
        for index, raw_rule in enumerate(raw_rules):
            rule = _rule(checker, raw_rule, (*path, "rules", index))
            if rule is not None:
                rules.append(rule)
    return RuleGroup(
        name=name,
        file=checker.doc.source,
        rules=tuple(rules),
        interval_seconds=interval,
        limit=limit,
        line=checker.doc.line(path) or 0,
    )


def parse_rule_file(text: str, source: str) -> RuleFile:
    """Validate ``text`` (the content of rule file ``source``) and return its groups.

    Raises ConfigErrors listing every finding, each with file, line and field.
    """
    try:
        doc = parse_yaml(text, source)
    except ConfigError as exc:
        raise ConfigErrors([exc]) from exc
    checker = _Checker(doc)
    groups: list[RuleGroup] = []
    if doc.data is not None:
        top = checker.mapping(doc.data, (), _FILE_FIELDS, "rule file")
        raw_groups = top.get("groups") or []
        if not isinstance(raw_groups, list):
            checker.fail(f"groups must be a list, got {_kind(raw_groups)}", ("groups",))
            raw_groups = []
        seen: dict[str, int] = {}
        for index, raw in enumerate(raw_groups):
            group = _group(checker, raw, ("groups", index), seen)
            if group is not None:
                groups.append(group)
    if checker.errors:
        raise ConfigErrors(checker.errors)
    return RuleFile(path=source, groups=tuple(groups))
