"""GPU service grouping: which pod labels become Prometheus labels, and under which names.

The rules follow dcgm-exporter so that our exporter and dcgm-exporter produce
the same label names: the allowlist regex is matched against the *raw*
Kubernetes key, and the key is then sanitized (every character outside
``[a-zA-Z0-9_]`` becomes ``_``). Unlike dcgm-exporter we also fix a leading
digit, refuse keys that would overwrite our own labels, and report keys that
collide after sanitizing instead of letting one silently win.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

GROUP_LABEL = "gpu_group"
DEFAULT_GROUP = "unassigned"
# Labels our series carry themselves; a pod label must never overwrite one.
RESERVED_LABELS = frozenset(
    {"node", "gpu", "uuid", "namespace", "pod", "container", "container_id", "pod_uid"}
    | {GROUP_LABEL, "cluster", "resource"}
)

_INVALID_LABEL_CHAR = re.compile(r"[^a-zA-Z0-9_]")
_GO_REGEXP_SPECIAL = frozenset("\\.+*?()|[]{}^$")
# Kubernetes label keys: optional DNS-subdomain prefix, then a name of at most 63 characters.
_K8S_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_PROM_LABEL_VALUE_MAX = 1024


class GroupingError(ValueError):
    """Invalid grouping options. The message names the option."""


def sanitize_label_key(key: str) -> str:
    """Map a Kubernetes label key to a Prometheus label name, as dcgm-exporter does.

    ``app.kubernetes.io/team`` becomes ``app_kubernetes_io_team``. A leading digit,
    which dcgm-exporter leaves invalid, gets a ``_`` prefix.
    """
    name = _INVALID_LABEL_CHAR.sub("_", key)
    if name[:1].isdigit():
        name = f"_{name}"
    return name


def quote_meta(text: str) -> str:
    """Go's ``regexp.QuoteMeta``: escape exactly the RE2 metacharacters."""
    return "".join(f"\\{ch}" if ch in _GO_REGEXP_SPECIAL else ch for ch in text)


def default_allowlist(group_label: str) -> str:
    """The allowlist used when none is given: only the group label itself."""
    return f"^({quote_meta(group_label)})$"


@dataclass(frozen=True)
class GroupingOptions:
    """The seed's ``groupLabel``, ``groupLabelAllowlistRegex`` and ``clusterName``, validated."""

    group_label: str
    allowlist_regex: str = ""
    cluster_name: str = ""
    default_group: str = DEFAULT_GROUP
    _allowlist: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.group_label:
            raise GroupingError("groupLabel: must not be empty")
        if not _K8S_LABEL_KEY.match(self.group_label):
            raise GroupingError(
                f"groupLabel: {self.group_label!r} is not a valid Kubernetes label key"
            )
        if not self.default_group:
            raise GroupingError("defaultGroup: must not be empty (it replaces a missing group)")
        if len(self.default_group) > _PROM_LABEL_VALUE_MAX:
            raise GroupingError("defaultGroup: longer than 1024 characters")
        regex = self.allowlist_regex or default_allowlist(self.group_label)
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise GroupingError(
                f"groupLabelAllowlistRegex: {regex!r} does not compile: {exc}"
            ) from exc
        object.__setattr__(self, "allowlist_regex", regex)
        object.__setattr__(self, "_allowlist", pattern)
        if not self.allows(self.group_label):
            raise GroupingError(
                f"groupLabelAllowlistRegex: {regex!r} does not match the group label "
                f"{self.group_label!r}, so gpu_group would always be empty"
            )
        sanitized = sanitize_label_key(self.group_label)
        if sanitized in RESERVED_LABELS:
            raise GroupingError(
                f"groupLabel: {self.group_label!r} sanitizes to the reserved label {sanitized!r}"
            )

    @property
    def group_label_name(self) -> str:
        """The Prometheus name of the raw group label, e.g. ``app_kubernetes_io_team``."""
        return sanitize_label_key(self.group_label)

    def allows(self, key: str) -> bool:
        """True if the raw Kubernetes key passes the (anchored) allowlist."""
        return self._allowlist.fullmatch(key) is not None

    def group_of(self, pod_labels: Mapping[str, str]) -> str:
        """The pod's ``gpu_group``: its group label, or the default bucket, never empty."""
        return pod_labels.get(self.group_label) or self.default_group


@dataclass(frozen=True)
class LabelKeyPlan:
    """How a set of raw pod label keys maps to Prometheus label names."""

    names: Mapping[str, str]  # raw key -> Prometheus name, only for exported keys
    collisions: Mapping[str, tuple[str, ...]]  # Prometheus name -> the raw keys that clash
    reserved: tuple[str, ...]  # raw keys refused because they map onto our own labels


def plan_label_keys(keys: Iterable[str], options: GroupingOptions) -> LabelKeyPlan:
    """Decide which allowlisted keys are exported; clashing keys are all withheld.

    When ``team.id`` and ``team-id`` both map to ``team_id`` neither is exported,
    because picking one would attach a value from the wrong key.
    """
    by_name: dict[str, list[str]] = {}
    reserved: list[str] = []
    for key in sorted(set(keys)):
        if not options.allows(key):
            continue
        name = sanitize_label_key(key)
        if name in RESERVED_LABELS or name.startswith("__"):
            reserved.append(key)
            continue
        by_name.setdefault(name, []).append(key)
    names = {raws[0]: name for name, raws in by_name.items() if len(raws) == 1}
    collisions = {name: tuple(raws) for name, raws in by_name.items() if len(raws) > 1}
    return LabelKeyPlan(names=names, collisions=collisions, reserved=tuple(reserved))
