"""The annotation keys GPU Guardian reads and writes on workloads and namespaces: the state
of a reclaim lives on the object it changed."""

from __future__ import annotations

PREFIX = "gpu-guardian.io/"


class Annotations:
    """Annotation keys, on workloads and namespaces. State lives on the object."""

    EXCLUDE = PREFIX + "exclude"
    EXCLUDE_UNTIL = PREFIX + "exclude-until"
    SNOOZE_UNTIL = PREFIX + "snooze-until"
    KILL_SWITCH = PREFIX + "kill-switch"  # on the controller's namespace
    # Written by the annotate step.
    FLAGGED_AT = PREFIX + "flagged-at"
    EPISODE = PREFIX + "episode"
    RULE = PREFIX + "rule"
    EVIDENCE = PREFIX + "evidence"
    PENDING_ACTION = PREFIX + "pending-action"
    PENDING_ACTION_AT = PREFIX + "pending-action-at"
    # Written by the reclaim step, in the same write as the scale.
    ORIGINAL_REPLICAS = PREFIX + "original-replicas"
    ORIGINAL_MIN_REPLICAS = PREFIX + "original-min-replicas"
    HPA = PREFIX + "hpa"
    SUSPENDED_JOBS = PREFIX + "suspended-jobs"  # a CronJob's running Jobs we suspended
    RECLAIMED_AT = PREFIX + "reclaimed-at"
    RECLAIMED_BY = PREFIX + "reclaimed-by"
    REASON = PREFIX + "reason"
    # Written by a right-size (``partial: rightSize``), with the reclaim's marks: the
    # count it left and the idle pods it asked the ReplicaSet controller to remove.
    RIGHT_SIZED_TO = PREFIX + "right-sized-to"
    RIGHT_SIZED_PODS = PREFIX + "right-sized-pods"
    # Kubernetes' own: the ReplicaSet controller removes the lowest first on a scale-down.
    POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
    # Written by restore: the warm-up clock restarts from it.
    RESTORED_AT = PREFIX + "restored-at"
    # The checkpoint handshake: we ask, the workload acknowledges (docs/policies.md).
    RECLAIM_REQUESTED_AT = PREFIX + "reclaim-requested-at"
    CHECKPOINTED_AT = PREFIX + "checkpointed-at"

    FLAG_KEYS = (
        FLAGGED_AT,
        EPISODE,
        RULE,
        EVIDENCE,
        PENDING_ACTION,
        PENDING_ACTION_AT,
        RECLAIM_REQUESTED_AT,
    )
    RECLAIM_KEYS = (
        ORIGINAL_REPLICAS,
        ORIGINAL_MIN_REPLICAS,
        HPA,
        RECLAIMED_AT,
        RECLAIMED_BY,
        REASON,
        RIGHT_SIZED_TO,
        RIGHT_SIZED_PODS,
        SUSPENDED_JOBS,
    )
