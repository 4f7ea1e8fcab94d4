"""Workload identity from a pod's name, for a replay without cluster access.

Controllers name their pods predictably: a Deployment's pods are
``<name>-<pod-template-hash>-<5 chars>``, a StatefulSet's ``<name>-<ordinal>``, a
CronJob's Job pods ``<cronjob>-<scheduled minute>-<5 chars>``, a Job's
``<job>-<5 chars>``. Anything else is taken as a bare pod. This is a guess, and the
report says so; ``--from-cluster`` reads the owner chain instead.
"""

from __future__ import annotations

import re

from guardian.model.reclaim import ActionKind
from guardian.model.remediation_events import WorkloadRef

# Kubernetes' safe alphabet for generated names (no vowels, no 0/1/3 lookalikes).
_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
_DEPLOYMENT = re.compile(rf"^(?P<name>.+)-{_SAFE}{{5,10}}-{_SAFE}{{5}}$")
_CRONJOB = re.compile(rf"^(?P<name>.+)-[0-9]{{8,}}-{_SAFE}{{5}}$")
_JOB = re.compile(rf"^(?P<name>.+)-{_SAFE}{{5}}$")
_STATEFULSET = re.compile(r"^(?P<name>.+)-(?:0|[1-9][0-9]*)$")

_KINDS: tuple[tuple[re.Pattern[str], str, str, ActionKind], ...] = (
    (_CRONJOB, "batch/v1", "CronJob", ActionKind.SUSPEND),
    (_DEPLOYMENT, "apps/v1", "Deployment", ActionKind.SCALE),
    (_STATEFULSET, "apps/v1", "StatefulSet", ActionKind.SCALE),
    (_JOB, "batch/v1", "Job", ActionKind.SUSPEND),
)


def workload_from_pod(namespace: str, pod: str) -> tuple[WorkloadRef, ActionKind]:
    """The root owner ``pod``'s name points to, and how it would be reclaimed."""
    for pattern, api_version, kind, action in _KINDS:
        found = pattern.match(pod)
        if found:
            return WorkloadRef(api_version, kind, namespace, found["name"]), action
    return WorkloadRef("v1", "Pod", namespace, pod), ActionKind.POD


def with_root_label(expr: str, label: str) -> str:
    """``expr`` with ``label`` set to ``Kind/name`` of the workload each series' ``pod``
    points to, in PromQL, by the same patterns as :func:`workload_from_pod` (the first
    that matches wins, so they are applied last to first)."""
    out = f'label_replace({expr}, "{label}", "Pod/${{1}}", "pod", "(.+)")'
    for pattern, _api_version, kind, _action in reversed(_KINDS):
        regex = pattern.pattern.removeprefix("^").removesuffix("$").replace("?P<name>", "")
        out = f'label_replace({out}, "{label}", "{kind}/${{1}}", "pod", "{regex}")'
    return out


def pod_pattern(ref: WorkloadRef) -> str:
    """A Prometheus regex matching the names of every pod ``ref`` may have had."""
    name = re.escape(ref.name)
    if ref.kind == "Deployment":
        return f"{name}-{_SAFE}{{5,10}}-{_SAFE}{{5}}"
    if ref.kind == "StatefulSet":
        return f"{name}-[0-9]+"
    if ref.kind == "CronJob":
        return f"{name}-[0-9]{{8,}}-{_SAFE}{{5}}"
    if ref.kind == "Job":
        return f"{name}-{_SAFE}{{5}}"
    return name
