"""Render loaded rule files as a Prometheus rule file or as PrometheusRule manifests.

Pure: rule files in, YAML text out. The output is deterministic (groups in the order of
the input files, fields in a fixed order), durations are whole Prometheus durations
(``5m``, ``1h30m``: the CRD's pattern allows no fractions), ``expr`` is always a string,
and group names are unique. A PrometheusRule larger than ``max_bytes`` (the operator's
admission webhook refuses specs over 512 KiB) is split into several objects, each
holding whole groups.

The runbook URL pattern replaces ``{alertname}``, ``{alertname_lower}`` and ``{group}``
and sets ``runbook_url`` on every alerting rule; any other ``{word}`` in braces is an
error, while Go template actions (``{{ ... }}``) are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from guardian.model.rules import AlertingRule, Rule, RuleFile, RuleGroup
from guardian_common.durations import format_duration

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "gpu-guardian"
MAX_OBJECT_BYTES = 512 * 1024
DEFAULT_NAME = "gpu-guardian-rules"
RUNBOOK_ANNOTATION = "runbook_url"
PLACEHOLDERS = ("alertname", "alertname_lower", "group")

Format = Literal["prometheusrule", "rulefile"]

_PLACEHOLDER = re.compile(r"(?<!\{)\{([A-Za-z_][A-Za-z0-9_]*)\}(?!\})")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class RenderError(ValueError):
    """The input cannot be rendered as asked (the message says why)."""


@dataclass(frozen=True)
class RenderOptions:
    format: Format = "prometheusrule"
    name: str = DEFAULT_NAME
    namespace: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    runbook_url_pattern: str | None = None
    sources: Sequence[str] = ()  # named in the header comment
    max_bytes: int = MAX_OBJECT_BYTES


def check_runbook_pattern(pattern: str) -> None:
    unknown = sorted({m for m in _PLACEHOLDER.findall(pattern) if m not in PLACEHOLDERS})
    if unknown:
        known = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
        raise RenderError(
            f"unknown placeholder(s) {', '.join(f'{{{u}}}' for u in unknown)} in the "
            f"runbook URL pattern {pattern!r}; use {known}"
        )


def expand_runbook_pattern(pattern: str, alertname: str, group: str) -> str:
    values = {"alertname": alertname, "alertname_lower": alertname.lower(), "group": group}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), pattern)


def check_object_meta(name: str, namespace: str | None, labels: Mapping[str, str]) -> None:
    """Kubernetes' rules for the name, namespace and label keys and values."""
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        raise RenderError(
            f"invalid name {name!r}: lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit, at most 253 characters"
        )
    if namespace is not None and (len(namespace) > 63 or not _DNS_LABEL.match(namespace)):
        raise RenderError(
            f"invalid namespace {namespace!r}: lowercase letters, digits and '-', "
            "at most 63 characters"
        )
    for key, value in labels.items():
        prefix, _, label = key.rpartition("/")
        if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
            raise RenderError(f"invalid label key {key!r}: the prefix must be a DNS subdomain")
        if not label or len(label) > 63 or not _LABEL_NAME.match(label):
            raise RenderError(
                f"invalid label key {key!r}: at most 63 letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit"
            )
        if len(value) > 63 or not _LABEL_VALUE.match(value):
            raise RenderError(
                f"invalid label value {value!r} for {key}: at most 63 letters, digits, "
                "'-', '_' or '.', starting and ending with a letter or digit"
            )


def _duration(seconds: float) -> str:
    return format_duration(seconds)


def rule_dict(rule: Rule, group: str, runbook_pattern: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(rule, AlertingRule):
        out["alert"] = rule.name
        out["expr"] = str(rule.expr)
        if rule.for_seconds:
            out["for"] = _duration(rule.for_seconds)
        if rule.keep_firing_for_seconds:
            out["keep_firing_for"] = _duration(rule.keep_firing_for_seconds)
        if rule.labels:
            out["labels"] = dict(rule.labels)
        annotations = dict(rule.annotations)
        if runbook_pattern is not None:
            annotations[RUNBOOK_ANNOTATION] = expand_runbook_pattern(
                runbook_pattern, rule.name, group
            )
        if annotations:
            out["annotations"] = annotations
    else:
        out["record"] = rule.name
        out["expr"] = str(rule.expr)
        if rule.labels:
            out["labels"] = dict(rule.labels)
    return out


def group_dict(group: RuleGroup, runbook_pattern: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": group.name}
    if group.interval_seconds:
        out["interval"] = _duration(group.interval_seconds)
    if group.limit:
        out["limit"] = group.limit
    out["rules"] = [rule_dict(r, group.name, runbook_pattern) for r in group.rules]
    return out


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (expressions, descriptions) so they stay readable."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def dump(data: Any) -> str:
    return yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,  # never fold a long line: expressions and templates stay as written
        default_flow_style=False,
    )


def unique_groups(files: Sequence[RuleFile]) -> list[RuleGroup]:
    seen: dict[str, str] = {}
    groups: list[RuleGroup] = []
    for rule_file in files:
        for group in rule_file.groups:
            if group.name in seen:
                raise RenderError(
                    f"group name {group.name!r} is used in {seen[group.name]} and in "
                    f"{rule_file.path}:{group.line}; group names must be unique in the output"
                )
            seen[group.name] = f"{rule_file.path}:{group.line}"
            groups.append(group)
    return groups


def prometheus_rule(
    name: str, namespace: str | None, labels: Mapping[str, str], groups: list[dict[str, Any]]
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {MANAGED_BY_LABEL: MANAGED_BY, **labels}
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": metadata,
        "spec": {"groups": groups},
    }


def split_groups(groups: list[dict[str, Any]], budget: int) -> list[list[dict[str, Any]]]:
    """Whole groups, in order, packed greedily into chunks of at most ``budget`` bytes."""
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    used = 0
    for group in groups:
        # Measured at the depth it has in the object, indentation included.
        size = len(dump({"spec": {"groups": [group]}}).encode("utf-8"))
        if size > budget:
            raise RenderError(
                f"group {group['name']!r} alone renders to {size} bytes, more than one "
                f"PrometheusRule may hold ({budget} bytes for its groups); split the group"
            )
        if current and used + size > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(group)
        used += size
    if current or not chunks:
        chunks.append(current)
    return chunks


def header(options: RenderOptions) -> str:
    sources = ", ".join(options.sources) if options.sources else "rule files"
    return (
        f"# Generated by `guardian rules render --format {options.format}` from {sources}.\n"
        "# Do not edit: change the rule files and render again.\n"
    )


def render(files: Sequence[RuleFile], options: RenderOptions) -> str:
    """The YAML text for ``files``. Raises RenderError."""
    if options.runbook_url_pattern is not None:
        check_runbook_pattern(options.runbook_url_pattern)
    groups = [group_dict(g, options.runbook_url_pattern) for g in unique_groups(files)]
    if options.format == "rulefile":
        return header(options) + dump({"groups": groups})
    check_object_meta(options.name, options.namespace, options.labels)
    empty = dump(prometheus_rule(options.name + "-000", options.namespace, options.labels, []))
    # The document separator and a little slack for the name suffix.
    budget = options.max_bytes - len(empty.encode("utf-8")) - 64
    chunks = split_groups(groups, budget)
    names = (
        [options.name]
        if len(chunks) == 1
        else [f"{options.name}-{i}" for i in range(1, len(chunks) + 1)]
    )
    for name in names:
        check_object_meta(name, options.namespace, {})
    documents = [
        dump(prometheus_rule(name, options.namespace, options.labels, chunk))
        for name, chunk in zip(names, chunks, strict=True)
    ]
    for name, text in zip(names, documents, strict=True):
        if len(text.encode("utf-8")) > options.max_bytes:  # the estimate above was wrong
            raise RenderError(
                f"PrometheusRule {name} renders to more than {options.max_bytes} bytes"
            )
    return header(options) + "---\n".join(documents)
