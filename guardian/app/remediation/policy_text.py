"""What ``guardian policies check`` says about each policy: a one-line summary, and with
``--effective`` every value of the policy as it acts, with where the value comes from
(the policy's own file and line, the cluster policy it inherits from, or the default)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import Enum

from guardian.engine.remediation.delegation import delegating_parents, judge
from guardian.engine.remediation.inherit import ADDED, Effective, Origin, as_written, leaves
from guardian.model.policies import LabelSelector, ReclaimPolicy
from guardian_common.durations import format_duration

COLUMN = 48  # where the origin column starts


def selector_text(selector: LabelSelector) -> str:
    """A label selector as ``kubectl get -l`` takes it: ``a=b,c in (x,y),!d``."""
    parts = [f"{k}={v}" for k, v in selector.match_labels.items()]
    for req in selector.match_expressions:
        values = f" ({','.join(req.values)})"
        parts.append(
            {
                "In": f"{req.key} in{values}",
                "NotIn": f"{req.key} notin{values}",
                "Exists": req.key,
                "DoesNotExist": f"!{req.key}",
            }[req.operator]
        )
    return ",".join(parts)


def scope_text(policy: ReclaimPolicy) -> str:
    """Where a policy acts: its namespaces, selectors and kinds."""
    scope = policy.spec.scope
    parts = []
    if policy.namespace:
        parts.append(f"namespace {policy.namespace} only")
    elif scope.namespaces:
        parts.append(f"namespaces {', '.join(scope.namespaces)}")
    elif scope.namespace_selector.empty:
        parts.append("all namespaces")
    if not scope.namespace_selector.empty:
        parts.append(f"namespaceSelector {selector_text(scope.namespace_selector)}")
    if not scope.workload_selector.empty:
        parts.append(f"workloadSelector {selector_text(scope.workload_selector)}")
    if scope.kinds:
        parts.append(f"kinds {', '.join(scope.kinds)}")
    return ", ".join(parts)


def describe(found: Effective) -> str:
    """One line: a policy as it acts (a team's, with what it inherits)."""
    policy, spec = found.policy, found.policy.spec
    ladder = spec.ladder
    steps = [s for s, on in (("notify", ladder.notify), ("annotate", ladder.annotate)) if on]
    if ladder.reclaim:
        steps.append(f"reclaim after {format_duration(ladder.grace_period)}")
    line = (
        f"{policy.kind} {policy.name} ({policy.source}): priority {spec.priority}, "
        f"mode {spec.mode.value}, {scope_text(policy)}; ladder: {' → '.join(steps)}; "
        f"warm-up {format_duration(spec.warmup)}"
    )
    if policy.namespace is None and spec.delegation.value != "none":
        line += f"; delegation {spec.delegation.value}"
    if found.parent is not None:
        line += f"; narrows {found.parent.kind} {found.parent.name}"
    return line


def acting(policy: ReclaimPolicy, cluster: Sequence[ReclaimPolicy]) -> Effective:
    """A team's policy under the first cluster policy (by name) it validly narrows;
    otherwise, and for a cluster policy, the policy as written."""
    if policy.namespace is not None:
        for parent in sorted(delegating_parents(policy, cluster), key=lambda p: p.name):
            found, wrong = judge(policy, parent)
            if not wrong:
                return found
    return as_written(policy)


def value_text(value: object) -> str:
    """A value as a policy's author writes it: durations as ``1h30m``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_duration(value)
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, LabelSelector):
        return selector_text(value) or "any"
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return f"[{', '.join(str(v) for v in value)}]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def _line(policy: ReclaimPolicy, path: str) -> str | None:
    """``file:line`` of a field (or of its nearest section) of a policy from a file."""
    file, _, line = policy.source.rpartition(":")
    if not file or not line.isdigit():
        return None  # an object in the cluster
    parts = f"spec.{path}".split(".")
    for end in range(len(parts), 0, -1):
        found = policy.line_of(".".join(parts[:end]))
        if found is not None:
            return f"{file}:{found}"
    return policy.source


def _named(policy: ReclaimPolicy, path: str) -> str:
    line = _line(policy, path)
    return f"{policy.kind} {policy.name}" + (f" ({line})" if line else "")


def _origin(found: Effective, path: str, origin: Origin) -> str:
    parent = found.parent
    if origin is Origin.DEFAULT or (origin is Origin.PARENT and parent is None):
        return "default"
    if origin is Origin.PARENT and parent is not None:
        return _named(parent, path)
    own = _line(found.policy, path) or found.policy.source
    if origin is Origin.OWN or parent is None:
        return own
    theirs = leaves(parent.spec)[path]
    if path in ADDED:  # added up: the value shown is both
        return f"{own} + {_named(parent, path)}"
    return f"{own}; {_named(parent, path)} also applies: {value_text(theirs)}"


def effective_text(found: Effective, header: str) -> list[str]:
    """``header``, then one line per field: its path, value and origin."""
    policy = found.policy
    out = [header]
    for path, value in leaves(policy.spec).items():
        origin = found.origins.get(path, Origin.DEFAULT)
        shown, where = value_text(value), _origin(found, path, origin)
        if policy.namespace is not None and path == "delegation":
            continue
        if policy.namespace is not None and path == "scope.namespaces" and not value:
            shown, where = f"[{policy.namespace}]", "its own namespace"
        text = f"  {path}: {shown}"
        out.append(f"{text:<{COLUMN}}  {where}")
    return out


def effective_report(policies: Sequence[ReclaimPolicy]) -> list[str]:
    """Each policy as it acts; a team's under each cluster policy that may delegate to it."""
    cluster = [p for p in policies if p.namespace is None]
    out: list[str] = []
    for policy in sorted(policies, key=lambda p: p.name):
        name = f"{policy.kind} {policy.name} ({policy.source})"
        parents = sorted(delegating_parents(policy, cluster), key=lambda p: p.name)
        if policy.namespace is None:
            out += effective_text(as_written(policy), f"effective {name}:")
        elif not parents:
            note = f"no ClusterReclaimPolicy delegates to namespace {policy.namespace}"
            out += effective_text(as_written(policy), f"effective {name}: no effect ({note}):")
        for parent in parents if policy.namespace is not None else ():
            found, wrong = judge(policy, parent)
            head = f"effective {name} under {parent.kind} {parent.name} ({parent.source})"
            out += effective_text(found, head + (": rejected (see below):" if wrong else ":"))
    return out
