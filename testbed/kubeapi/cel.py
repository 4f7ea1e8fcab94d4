"""The CEL rules (``x-kubernetes-validations``) the fake can evaluate, mirrored in Python.

The fake has no CEL engine: each rule text it knows maps to a Python function that
decides the same (tests/integration/testbed/test_kubeapi_crds.py evaluates the CEL text
with cel-python on the same objects and compares). A CRD carrying any other rule is
refused when it is created, so a test never passes on a rule nobody checked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from guardian.model.policies_crd import (
    RULE_NO_ADVICE,
    RULE_RIGHT_SIZE,
    RULE_SELECTOR_VALUES,
    RULE_WARN_FIRST,
)

Rule = Callable[[Any], bool]

_ALL_KEYS_MATCH = re.compile(r"^self\.all\(k, k\.matches\('(?P<re>[^']*)'\)\)$")


def _warn_first(obj: Mapping[str, Any]) -> bool:
    if "notify" not in obj or obj["notify"]:
        return True
    return "reclaim" in obj and not obj["reclaim"]


def _selector_values(req: Mapping[str, Any]) -> bool:
    values = req.get("values")
    if req.get("operator") in ("In", "NotIn"):
        return values is not None and len(values) > 0
    return values is None or len(values) == 0


def _right_size(spec: Mapping[str, Any]) -> bool:
    ladder = spec.get("ladder") or {}
    return spec.get("partial") != "rightSize" or ladder.get("reclaim", True) is not False


def _no_advice(alerts: Mapping[str, Any]) -> bool:
    names = alerts.get("names") or []
    labels = alerts.get("matchLabels") or {}
    return (
        "GpuMemoryUnderutilized" not in names
        and labels.get("guardian_class") != "rightsize"
        and labels.get("alertname") != "GpuMemoryUnderutilized"
    )


KNOWN: dict[str, Rule] = {
    RULE_WARN_FIRST: _warn_first,
    RULE_SELECTOR_VALUES: _selector_values,
    RULE_NO_ADVICE: _no_advice,
    RULE_RIGHT_SIZE: _right_size,
}


def compile_rule(text: str) -> Rule | None:
    """The Python mirror of ``text``, or None when the fake does not know the rule."""
    if text in KNOWN:
        return KNOWN[text]
    found = _ALL_KEYS_MATCH.match(text)
    if found is not None:
        pattern = re.compile(found.group("re"))
        return lambda obj: all(pattern.search(str(key)) for key in obj)
    return None
