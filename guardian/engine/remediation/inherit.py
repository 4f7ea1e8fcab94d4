"""Team policies inherit: a team's ReclaimPolicy is its cluster policy with what it writes.

The *effective* policy of a team's ReclaimPolicy under a ClusterReclaimPolicy that
delegates to it is the cluster policy's spec (what its admin wrote, else the defaults)
overlaid, field by field and section by section (``ladder``, ``limits``, ``reclaim``,
``checkpoint``, ``alerts``, ``scope``, ``exclusions``), with the fields the team *wrote*:
present in its YAML or object, whatever their value (pydantic's ``model_fields_set``).
A field the team leaves out is the cluster's, never the default. Then:

- ``scope.namespaces`` and ``delegation`` are never inherited: a team's policy acts in
  its own namespace only, and only a cluster policy delegates;
- ``exclusions.namespaces`` add up: the cluster's and the team's;
- the cluster's ``scope`` and ``alerts`` keep applying (a team's policy is matched only
  against the workloads and alerts its cluster policy matched), and so do its
  ``activeWindows`` (the ladder advances only inside both), ``notifyOutsideWindows``
  and ``exclusions.workloadSelector`` (either excludes): a team's value replaces the
  cluster's in the effective policy, and can only narrow what the cluster allows.

The delegation rule (delegation.py) then judges the effective policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ValidationError

from guardian.model.policies import LabelSelector, PolicySpec, ReclaimPolicy
from guardian.model.policies_load import field_path, validation_findings

Violation = tuple[str, str]  # (field path, why)

NOT_INHERITED = frozenset({"scope.namespaces", "delegation"})
ADDED = frozenset({"exclusions.namespaces"})
ALSO_APPLIES = frozenset(
    {
        "alerts.names",
        "alerts.matchLabels",
        "scope.namespaceSelector",
        "scope.workloadSelector",
        "scope.kinds",
        "activeWindows",
        "notifyOutsideWindows",
        "exclusions.workloadSelector",
    }
)
"""Fields whose cluster value keeps applying next to the team's."""


class Origin(StrEnum):
    """Where a value of an effective policy comes from."""

    OWN = "own"  # written in the policy itself
    PARENT = "parent"  # written in the cluster policy it narrows
    BOTH = "both"  # the policy's own and the cluster policy's, both apply
    DEFAULT = "default"  # written in neither


@dataclass(frozen=True)
class Effective:
    """A policy as it acts: a team's with what it inherits (``parent``: the cluster
    policy it narrows), or a cluster policy as written. ``origins``: each spec field's
    path (``ladder.gracePeriod``) and where its value comes from; ``problems``: why the
    combination is not a valid policy (the team's is then rejected)."""

    policy: ReclaimPolicy
    parent: ReclaimPolicy | None
    origins: dict[str, Origin]
    problems: tuple[Violation, ...] = ()


def _section(value: object) -> bool:
    """A nested section merged field by field (a label selector is one value)."""
    return isinstance(value, BaseModel) and not isinstance(value, LabelSelector)


def _fields(model: BaseModel) -> list[tuple[str, str]]:
    """(attribute, key as written) of each field of ``model``."""
    return [(name, info.alias or name) for name, info in type(model).model_fields.items()]


def written(model: BaseModel, prefix: str = "") -> set[str]:
    """The paths of the leaf fields the author wrote (``ladder.gracePeriod``)."""
    out: set[str] = set()
    for name, key in _fields(model):
        if name not in model.model_fields_set:
            continue
        value = getattr(model, name)
        out |= written(value, f"{prefix}{key}.") if _section(value) else {prefix + key}
    return out


def leaves(model: BaseModel, prefix: str = "") -> dict[str, Any]:
    """Every leaf field of ``model`` by path, in the fields' order."""
    out: dict[str, Any] = {}
    for name, key in _fields(model):
        value = getattr(model, name)
        out |= leaves(value, f"{prefix}{key}.") if _section(value) else {prefix + key: value}
    return out


def _restricts(value: object) -> bool:
    """Whether a cluster value narrows anything (an empty list, map or selector, no
    exclusion selector and ``notifyOutsideWindows: true`` do not)."""
    if isinstance(value, LabelSelector):
        return not value.empty
    return value not in ((), {}, None, True)


def _leaf(path: str, mine: Any, theirs: Any, wrote: bool) -> tuple[Any, Origin | None]:
    """The effective value of one field, and its origin when the team wrote it (None:
    inherited)."""
    if path in NOT_INHERITED:
        return mine, Origin.OWN if wrote else Origin.DEFAULT
    if not wrote:
        return theirs, None
    if path in ADDED:
        merged = tuple(dict.fromkeys((*theirs, *mine)))
        return merged, Origin.BOTH if theirs and merged != tuple(mine) else Origin.OWN
    both = path in ALSO_APPLIES and _restricts(theirs) and mine != theirs
    return mine, Origin.BOTH if both else Origin.OWN


@dataclass
class _Found:
    mine: set[str]
    theirs: set[str]
    origins: dict[str, Origin]


def _merge(child: BaseModel, parent: BaseModel, found: _Found, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, key in _fields(child):
        path = prefix + key
        mine, theirs = getattr(child, name), getattr(parent, name)
        if _section(mine):
            out[key] = _merge(mine, theirs, found, path + ".")
            continue
        out[key], origin = _leaf(path, mine, theirs, path in found.mine)
        if origin is None:
            origin = Origin.PARENT if path in found.theirs else Origin.DEFAULT
        found.origins[path] = origin
    return out


def as_written(policy: ReclaimPolicy) -> Effective:
    """A policy on its own: each value its author's or the default."""
    mine = written(policy.spec)
    origins = {p: Origin.OWN if p in mine else Origin.DEFAULT for p in leaves(policy.spec)}
    return Effective(policy, None, origins)


def inherit(child: ReclaimPolicy, parent: ReclaimPolicy) -> Effective:
    """``child`` (a team's policy) with every field it does not write taken from
    ``parent`` (the cluster policy that delegates to it)."""
    found = _Found(written(child.spec), written(parent.spec), {})
    data = _merge(child.spec, parent.spec, found, "")
    try:
        spec = PolicySpec.model_validate(data)
    except ValidationError as exc:
        why = f"with what it inherits from ClusterReclaimPolicy {parent.name}"
        problems = tuple(
            (field_path(("spec", *loc)), f"{message} ({why})")
            for loc, message in validation_findings(exc)
        )
        return Effective(child, parent, found.origins, problems)
    return Effective(child.model_copy(update={"spec": spec}), parent, found.origins)


_CACHE: dict[tuple[int, int], tuple[ReclaimPolicy, ReclaimPolicy, Effective]] = {}
_CACHE_SIZE = 1024


def inherited(child: ReclaimPolicy, parent: ReclaimPolicy) -> Effective:
    """:func:`inherit`, remembered for the same two policy objects (policies are frozen:
    the planner asks for the same pair for every workload of a cycle)."""
    key = (id(child), id(parent))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is child and hit[1] is parent:
        return hit[2]
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    found = inherit(child, parent)
    _CACHE[key] = (child, parent, found)
    return found
