"""A policy's spec is bounded: every string, list and map of the CRD schema has a limit,
the worst case stays under 512 KiB, and the pydantic model refuses what the CRD refuses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from guardian.model import policy_limits as limit
from guardian.model.policies_crd import spec_schema
from guardian.model.policies_load import policy_from_object
from guardian_common.errors import ConfigErrors

WORST_CASE_BYTES = 512 << 10


def worst_case(schema: dict[str, Any], path: str = "spec") -> int:
    """The largest JSON the schema admits, in bytes of ASCII text; a KeyError names an
    unbounded string, list or map."""
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"])
    kind = schema.get("type")
    if schema.get("x-kubernetes-int-or-string") or kind == "string":
        return int(schema["maxLength"]) + 2
    if kind in ("integer", "boolean"):
        return 20
    if kind == "array":
        return 2 + int(schema["maxItems"]) * (worst_case(schema["items"], f"{path}[]") + 1)
    assert kind == "object", path
    total = 2
    for name, child in (schema.get("properties") or {}).items():
        total += len(name) + 4 + worst_case(child, f"{path}.{name}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):  # label keys: their pattern bounds them
        each = limit.MAX_LABEL_KEY + 4 + worst_case(extra, f"{path}.*")
        total += int(schema["maxProperties"]) * each
    return total


@pytest.mark.parametrize("cluster", [True, False], ids=["cluster", "namespaced"])
def test_every_field_of_the_spec_is_bounded(cluster: bool) -> None:
    assert worst_case(spec_schema(cluster)) <= WORST_CASE_BYTES


def policy(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "gpu-guardian.io/v1alpha1",
        "kind": "ClusterReclaimPolicy",
        "metadata": {"name": "fleet"},
        "spec": spec,
    }


def selector(values: int = 1, expressions: int = 1, labels: int = 1) -> dict[str, Any]:
    value = "v" * limit.MAX_LABEL_VALUE
    return {
        "matchLabels": {f"k{i}": value for i in range(labels)},
        "matchExpressions": [
            {"key": f"k{i}", "operator": "In", "values": [value] * values}
            for i in range(expressions)
        ],
    }


def names(count: int, length: int = limit.MAX_NAME) -> list[str]:
    return [f"n{i}".ljust(length, "x") for i in range(count)]


AT_THE_LIMITS = policy(
    alerts={
        "names": ["a" * limit.MAX_TEXT] * limit.MAX_ALERT_NAMES,
        "matchLabels": {f"k{i}": "v" * limit.MAX_TEXT for i in range(limit.MAX_LABELS)},
    },
    scope={
        "namespaces": names(limit.MAX_NAMESPACES),
        "kinds": ["K" * limit.MAX_NAME] * limit.MAX_KINDS,
        "workloadSelector": selector(limit.MAX_VALUES, limit.MAX_EXPRESSIONS, limit.MAX_LABELS),
    },
    exclusions={"namespaces": names(limit.MAX_NAMESPACES)},
    activeWindows=["Mon-Fri 07:30-20:30 UTC"] * limit.MAX_WINDOWS,
)

OVER = [
    ({"alerts": {"names": ["a"] * (limit.MAX_ALERT_NAMES + 1)}}, "spec.alerts.names"),
    ({"alerts": {"names": ["a" * (limit.MAX_TEXT + 1)]}}, "spec.alerts.names[0]"),
    (
        {"alerts": {"matchLabels": {f"k{i}": "v" for i in range(limit.MAX_LABELS + 1)}}},
        "spec.alerts.matchLabels",
    ),
    ({"scope": {"namespaces": names(limit.MAX_NAMESPACES + 1, 8)}}, "spec.scope.namespaces"),
    ({"scope": {"kinds": ["K"] * (limit.MAX_KINDS + 1)}}, "spec.scope.kinds"),
    ({"scope": {"kinds": ["K" * (limit.MAX_NAME + 1)]}}, "spec.scope.kinds[0]"),
    (
        {"scope": {"workloadSelector": selector(values=limit.MAX_VALUES + 1)}},
        "spec.scope.workloadSelector.matchExpressions[0].values",
    ),
    (
        {"scope": {"namespaceSelector": selector(expressions=limit.MAX_EXPRESSIONS + 1)}},
        "spec.scope.namespaceSelector.matchExpressions",
    ),
    (
        {"scope": {"workloadSelector": {"matchLabels": {"app": "v" * 64}}}},
        "spec.scope.workloadSelector.matchLabels.app",
    ),
    (
        {"exclusions": {"namespaces": names(limit.MAX_NAMESPACES + 1, 8)}},
        "spec.exclusions.namespaces",
    ),
    (
        {"activeWindows": ["Mon-Fri 07:30-20:30 UTC"] * (limit.MAX_WINDOWS + 1)},
        "spec.activeWindows",
    ),
]


def test_a_policy_at_every_limit_is_accepted() -> None:
    found = policy_from_object(AT_THE_LIMITS)
    assert len(found.spec.scope.namespaces) == limit.MAX_NAMESPACES
    assert len(json.dumps(AT_THE_LIMITS)) < WORST_CASE_BYTES


@pytest.mark.parametrize(("spec", "field"), OVER, ids=[field for _, field in OVER])
def test_the_model_refuses_what_the_crd_refuses(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigErrors) as info:
        policy_from_object(policy(**spec))
    (error,) = info.value.errors
    assert error.field == field
    assert "at most" in error.reason


def test_a_label_key_longer_than_kubernetes_allows_is_refused() -> None:
    key = "a" * 64  # a name part of at most 63
    with pytest.raises(ConfigErrors, match="invalid label key"):
        policy_from_object(policy(scope={"workloadSelector": {"matchLabels": {key: "v"}}}))


@pytest.mark.parametrize("zone", ["A" * 300, "Europe"], ids=["too-long", "a-folder"])
def test_a_window_naming_no_zone_file_is_an_error_not_a_crash(zone: str) -> None:
    """The zone lookup raised OSError (file name too long, is a directory)."""
    with pytest.raises(ConfigErrors) as info:
        policy_from_object(policy(activeWindows=[f"Mon-Fri 07:30-20:30 {zone}"]))
    (error,) = info.value.errors
    assert error.field == "spec.activeWindows[0]"
