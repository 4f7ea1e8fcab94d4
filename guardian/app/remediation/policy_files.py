"""Read policy files (ClusterReclaimPolicy and ReclaimPolicy documents, or `kubectl get
-o yaml` exports of them): every finding of every file, each with file, line and field."""

from __future__ import annotations

import glob
from collections.abc import Sequence

from guardian.app.config_files import parse_files
from guardian.app.remediation.policy_text import acting, describe, effective_report
from guardian.engine.remediation import find_overlaps
from guardian.engine.remediation.delegation import opt_in_gap, review
from guardian.model.policies import Mode, ReclaimPolicy
from guardian.model.policies_load import check_unique, parse_policies
from guardian_common.errors import ConfigError


def expand(patterns: Sequence[str]) -> list[str]:
    files: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not matches:
            raise ConfigError(f"no policy file matches {pattern!r}", field="policy_files")
        files.extend(m for m in matches if m not in files)
    return files


def load_policies(patterns: Sequence[str]) -> list[ReclaimPolicy]:
    policies = [p for batch in parse_files(expand(patterns), parse_policies) for p in batch]
    check_unique(policies)
    return policies


def _notes(policies: Sequence[ReclaimPolicy]) -> list[str]:
    # GpuMemoryUnderutilized is advice no policy acts on; an idle pod on a shared GPU
    # (GpuShareIdle) is reclaimable, which a policy written for whole GPUs may not mean.
    cluster = [p for p in policies if p.namespace is None]
    acts = [acting(p, cluster).policy for p in policies]
    notes = [
        f"note: {p.name} enforces on every alert with {p.spec.alerts.match_labels} "
        "(GpuShareIdle too: idle pods on shared GPUs); list alerts.names: [GpuIdle] "
        "to act on GPUs idle as a whole only"
        for p in acts
        if p.spec.mode is Mode.ENFORCE and not p.spec.alerts.names and p.spec.ladder.reclaim
    ]
    gaps = [(p.name, opt_in_gap(p, policies)) for p in sorted(cluster, key=lambda p: p.name)]
    return notes + [f"note: {name}: {gap}" for name, gap in gaps if gap]


def check_report(
    patterns: Sequence[str], effective: bool = False
) -> tuple[int, list[str], list[str]]:
    """(number of policies, lines to print, problems). Raises ConfigErrors for invalid
    files. ``effective``: add each policy as it acts, value by value, with its origin."""
    policies = load_policies(patterns)
    cluster = [p for p in policies if p.namespace is None]
    lines = [describe(acting(p, cluster)) for p in sorted(policies, key=lambda p: p.name)]
    lines += _notes(policies)
    problems: list[str] = []
    for child in sorted((p for p in policies if p.namespace), key=lambda p: p.name):
        problems += [
            f"{child.name} has no effect: {field + ': ' if field else ''}{why}"
            for field, why in review(child, cluster)
        ]
    # A team's policy narrows its cluster policy by design: overlaps count among peers.
    peers: dict[str | None, list[ReclaimPolicy]] = {}
    for policy in policies:
        peers.setdefault(policy.namespace, []).append(acting(policy, cluster).policy)
    overlaps = [o for group in peers.values() for o in find_overlaps(group)]
    for overlap in overlaps:
        text = (
            f"overlap: {overlap.winner.name} and {overlap.loser.name} can both match "
            f"({overlap.why}); {overlap.winner.name} wins"
        )
        if overlap.ambiguous:
            problems.append(
                f"{text} only by specificity or name at the same priority "
                f"{overlap.winner.spec.priority}: give one a higher priority"
            )
        else:
            lines.append(f"{text} by priority")
    if effective:
        lines += effective_report(policies)
    return len(policies), lines, problems
